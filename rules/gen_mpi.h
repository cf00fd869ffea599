/* gen_mpi.h - `superopt generate --mpi`: the generator sharded over MPI ranks, merged at rank 0. */
#ifndef SO_GEN_MPI_H
#define SO_GEN_MPI_H

#include "gen.h"

/* Initialises MPI (a singleton without mpirun), runs shard RANK/SIZE of o (o->shard_n must be 1:
   --shard and --mpi exclude each other) with its own checkpoint o->ckpt_path + ".RofN" when
   o->ckpt_path is set, and sends its rules and stats to rank 0 (MPI messages, the rules in the
   rule-file text format). On rank 0 *out receives the merged rules (so_gen_merge of all shards,
   the same rules and header as one so_gen_run of o) and *st the combined stats; on other ranks
   *out is empty. *rank receives this process's rank. A failure on any rank prints one line
   "superopt generate: rank R of N: <message>" and aborts every rank (MPI_Abort, exit 1), so it
   returns only SO_OK. Every rank must then call so_gen_mpi_finish. */
so_status so_gen_mpi_run(const so_gen_options *o, so_ruleset *out, so_gen_stats *st, int *rank);

/* Collective end of a --mpi run: rank 0 passes its exit status (0: OUT written), the others
   receive it; on 0 each rank removes its own checkpoint. Finalises MPI; returns the status. */
int so_gen_mpi_finish(int rc);

#endif
