/* kset_names.h - gives each kernel source's public names the suffix of the level it is compiled for (_scalar, _avx2, _avx512), so that one source builds every level and only the dispatch (kset.h) reaches them. */
/* Include first in every per-level kernel source (the files kset_avx2.c includes);
   never in a header or in a file outside the kernel set. kset_avx2.c / kset_avx512.c define
   SO_KSET_SUFFIX before including the sources; compiled on their own they are the scalar level. */
#ifndef SO_KSET_NAMES_H
#define SO_KSET_NAMES_H

#ifndef SO_KSET_SUFFIX
#define SO_KSET_SUFFIX scalar
#endif
#define SO_KN__(n, s) n##_##s
#define SO_KN_(n, s) SO_KN__(n, s)
#define SO_KN(n) SO_KN_(n, SO_KSET_SUFFIX)

/* the entry points of kset.def (reached through dispatch.c) */
#define so_fast_select SO_KN(so_fast_select)
#define so_fast_module SO_KN(so_fast_module)
#define so_fast_chain_build SO_KN(so_fast_chain_build)
#define so_fast_chain_apply SO_KN(so_fast_chain_apply)
#define so_sgemm SO_KN(so_sgemm)
#define so_gemv_packed SO_KN(so_gemv_packed)
#define so_gemv SO_KN(so_gemv)
#define so_dconv_plan SO_KN(so_dconv_plan)
#define so_dconv_packed_bytes SO_KN(so_dconv_packed_bytes)
#define so_dconv_run SO_KN(so_dconv_run)
#define so_dconv_free SO_KN(so_dconv_free)
#define so_gemm_packed_b_floats SO_KN(so_gemm_packed_b_floats)
#define so_gemm_pack_b SO_KN(so_gemm_pack_b)
#define so_gemm_scratch_floats SO_KN(so_gemm_scratch_floats)
#define so_gemm_packed SO_KN(so_gemm_packed)
#define so_gemm_full_scratch_floats SO_KN(so_gemm_full_scratch_floats)
#define so_gemm SO_KN(so_gemm)
#define so_gemm_small SO_KN(so_gemm_small)
#define so_gemm_packed_a_floats SO_KN(so_gemm_packed_a_floats)
#define so_gemm_pack_a SO_KN(so_gemm_pack_a)
#define so_gemm_apacked_scratch_floats SO_KN(so_gemm_apacked_scratch_floats)
#define so_gemm_apacked SO_KN(so_gemm_apacked)

/* names shared between the kernel set's own files only: no unsuffixed definition exists, so a call
   from outside the set fails to link */
#define so_epi_row SO_KN(so_epi_row)
#define so_epi_act SO_KN(so_epi_act)
#define so_epi_cols SO_KN(so_epi_cols)
#define so_sgemm_threads SO_KN(so_sgemm_threads)
#define so_sgemm_onednn SO_KN(so_sgemm_onednn)
#define so_sgemm_ours SO_KN(so_sgemm_ours)
#define so_pool_deinterleave2 SO_KN(so_pool_deinterleave2)
#define so_pool_fuse_pad SO_KN(so_pool_fuse_pad)
#define so_conv_select SO_KN(so_conv_select)
#define so_dconv_pad_plane SO_KN(so_dconv_pad_plane)
#define so_wino_pack SO_KN(so_wino_pack)
#define so_wino_plan SO_KN(so_wino_plan)
#define so_wino_run SO_KN(so_wino_run)
#define so_matmul_select SO_KN(so_matmul_select)
#define so_elem_select SO_KN(so_elem_select)
#define so_norm_select SO_KN(so_norm_select)
#define so_pool_select SO_KN(so_pool_select)
#define so_move_select SO_KN(so_move_select)
#define so_deconv_select SO_KN(so_deconv_select)

#endif
