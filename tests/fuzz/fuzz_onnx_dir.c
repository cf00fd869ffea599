/* fuzz_onnx_dir.c - libFuzzer target: so_onnx_load on a model file in a private folder, next to external-data files and symlinks the input can name, to reach external-data resolution and nested subgraphs through the file loader; checks clean errors, graph invariants, and that no byte of a file outside the model's folder ever reaches a weight. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "graph.h"
#include "onnx_io.h"

/* Input layout: 4 bytes little-endian n, then n bytes of model (model.onnx), then the rest is
   the content of the external-data files w.bin and sub/w.bin (make_onnx_seeds.py writes seeds
   in this layout into tests/fuzz/onnx_dir/).

   The folder, made once:
     D/outside.bin        4096 canary bytes: must never reach a weight
     D/m/model.onnx       the model (rewritten per input)
     D/m/w.bin, D/m/sub/w.bin   the data part (rewritten per input)
     D/m/wlink.bin -> ../outside.bin   a file symlink leading out
     D/m/link -> ..                    a folder symlink leading out (link/outside.bin)
     D/m/fifo             a FIFO: must be refused, never waited on */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64], model_path[128], w_path[128], sub_w_path[128];
static const uint8_t canary[8] = {0xC4, 0x7A, 0x12, 0xE9, 0x5B, 0x33, 0xAD, 0x0F};

static void write_all(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) abort();
    for (size_t done = 0; done < n;) {
        ssize_t k = write(fd, (const char *)p + done, n - done);
        if (k <= 0) abort();
        done += (size_t)k;
    }
    close(fd);
}

static void cleanup(void)
{
    static const char *const names[] = {"m/model.onnx", "m/w.bin", "m/sub/w.bin", "m/wlink.bin", "m/link", "m/fifo", "outside.bin"};
    char p[160];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", root, names[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/m/sub", root);
    rmdir(p);
    snprintf(p, sizeof p, "%s/m", root);
    rmdir(p);
    rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    so_max_alloc_bytes = (size_t)16 << 20; /* as fuzz_onnx: accepted models stay small */
    snprintf(root, sizeof root, "/tmp/so_fuzz_dir_XXXXXX");
    if (!mkdtemp(root)) abort();
    char p[160];
    uint8_t out[4096];
    for (size_t i = 0; i < sizeof out; i++) out[i] = canary[i % sizeof canary];
    snprintf(p, sizeof p, "%s/outside.bin", root);
    write_all(p, out, sizeof out);
    snprintf(p, sizeof p, "%s/m", root);
    if (mkdir(p, 0700) != 0) abort();
    snprintf(p, sizeof p, "%s/m/sub", root);
    if (mkdir(p, 0700) != 0) abort();
    snprintf(p, sizeof p, "%s/m/wlink.bin", root);
    if (symlink("../outside.bin", p) != 0) abort();
    snprintf(p, sizeof p, "%s/m/link", root);
    if (symlink("..", p) != 0) abort();
    snprintf(p, sizeof p, "%s/m/fifo", root);
    if (mkfifo(p, 0600) != 0) abort();
    snprintf(model_path, sizeof model_path, "%s/m/model.onnx", root);
    snprintf(w_path, sizeof w_path, "%s/m/w.bin", root);
    snprintf(sub_w_path, sizeof sub_w_path, "%s/m/sub/w.bin", root);
    atexit(cleanup);
    return 0;
}

/* Does any weight hold the canary (8 bytes of outside.bin)? */
static int leaked(const so_model *m)
{
    for (int32_t i = 0; i < m->n_weights; i++) {
        const uint8_t *d = m->weights[i].data;
        int64_t n = so_shape_numel(&m->weights[i].shape);
        size_t bytes = n > 0 ? (size_t)n * (m->weights[i].shape.dtype == SO_I64 ? 8 : 4) : 0;
        for (size_t j = 0; d && j + sizeof canary <= bytes; j++)
            if (d[j] == canary[0] && !memcmp(d + j, canary, sizeof canary)) return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    size_t n = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
    if (n > size - 4) n = size - 4;
    const uint8_t *model = data + 4, *ext = data + 4 + n;
    size_t ext_n = size - 4 - n;
    /* the data part may not carry the canary itself (the oracle below would then be void) */
    for (size_t j = 0; j + sizeof canary <= ext_n; j++)
        if (!memcmp(ext + j, canary, sizeof canary)) return 0;
    write_all(model_path, model, n);
    write_all(w_path, ext, ext_n);
    write_all(sub_w_path, ext, ext_n);
    so_model *m = NULL;
    if (so_onnx_load(model_path, &m) == SO_OK) {
        if (!m || !m->graph || m->n_outputs < 1) abort();
        if (leaked(m)) {
            fprintf(stderr, "fuzz: bytes of a file outside the model's folder reached a weight\n");
            abort();
        }
        so_model_free(m);
    } else {
        if (m) abort(); /* *out must be NULL on failure */
        fuzz_check_message(model_path);
    }
    return 0;
}
