/* ref_rnn.c - reference kernels of the GRU and RNN operators (ops.def; declared in ref.h): plain loops, double accumulators. */
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The RNN cell's activation (ops.def RNN mode): 0 Tanh, 1 Relu, 2 Sigmoid. */
static double rnn_act(int32_t mode, double x) { return mode == 1 ? (x > 0.0 ? x : 0.0) : mode == 2 ? sigmoid_d(x) : tanh(x); }

/* acc[r] = bias[r] + sum_k M[r, k] * v[k] for r < rows (bias NULL: 0). */
static void matvec(const float *M, const float *bias, const double *v, int64_t rows, int64_t cols, double *acc)
{
    for (int64_t r = 0; r < rows; r++) {
        double s = bias ? (double)bias[r] : 0.0;
        for (int64_t k = 0; k < cols; k++) s += (double)M[r * cols + k] * v[k];
        acc[r] = s;
    }
}

/* GRU (gates 3: z r h; mode = linear_before_reset) or RNN (gates 1; mode = activation) over inputs at their ONNX
   positions X W R [B seq_lens h0]. Y [T,D,N,H] is zero past a sequence's length; Y_h holds each sequence's last
   state (h0 for an empty one). */
static so_status run_recurrent(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out, int64_t gates)
{
    const so_attr *a = n->attr;
    const int64_t T = in[0].shape.dim[0], NB = in[0].shape.dim[1], I = in[0].shape.dim[2];
    const int64_t D = a->direction == 2 ? 2 : 1, H = in[2].shape.dim[2], G = gates * H;
#define OPT(k) (n->n_in > (k) && in[k].data ? (const void *)in[k].data : NULL)
    const float *X = in[0].data, *Wt = in[1].data, *Rt = in[2].data, *Bt = OPT(3), *H0 = OPT(5);
    const void *SL = OPT(4);
#undef OPT
    const int sl_i64 = SL && in[4].shape.dtype == SO_I64;
    float *Y = out[0].data, *YH = n->n_out > 1 ? out[1].data : NULL;
    double *buf = malloc((size_t)(2 * G + 3 * H + I) * sizeof *buf);
    (void)g;
    if (!buf) return so_errorf("node '%s' (%s): out of memory", n->name ? n->name : "?", so_ops[n->op].onnx);
    double *gx = buf, *gh = buf + G, *h = buf + 2 * G, *rh = h + H, *hn = rh + H, *xv = hn + H;
    memset(Y, 0, (size_t)(T * D * NB * H) * sizeof *Y);
    for (int64_t d = 0; d < D; d++) {
        const int reverse = a->direction == 1 || d == 1;
        const float *W = Wt + d * G * I, *R = Rt + d * G * H;
        const float *WB = Bt ? Bt + d * 2 * G : NULL, *RB = Bt ? Bt + d * 2 * G + G : NULL;
        for (int64_t b = 0; b < NB; b++) {
            int64_t L = T;
            if (SL) {
                float lf = sl_i64 ? 0.0f : ((const float *)SL)[b];
                L = sl_i64 ? ((const int64_t *)SL)[b] : (lf >= 0.0f && lf <= (float)T) ? (int64_t)lf : T;
            }
            if (L < 0) L = 0;
            if (L > T) L = T;
            for (int64_t j = 0; j < H; j++) h[j] = H0 ? H0[(d * NB + b) * H + j] : 0.0;
            for (int64_t s = 0; s < L; s++) {
                const int64_t t = reverse ? L - 1 - s : s;
                for (int64_t k = 0; k < I; k++) xv[k] = X[(t * NB + b) * I + k];
                matvec(W, WB, xv, G, I, gx);
                matvec(R, RB, h, G, H, gh);
                if (gates == 1) {
                    for (int64_t j = 0; j < H; j++) hn[j] = rnn_act(a->mode, gx[j] + gh[j]);
                } else {
                    /* ONNX gate order z, r, h; linear_before_reset = 0 applies r to h before the product with Rh */
                    if (!a->mode) {
                        for (int64_t j = 0; j < H; j++) rh[j] = sigmoid_d(gx[H + j] + gh[H + j]) * h[j];
                        matvec(R + 2 * H * H, RB ? RB + 2 * H : NULL, rh, H, H, gh + 2 * H);
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double z = sigmoid_d(gx[j] + gh[j]), r = sigmoid_d(gx[H + j] + gh[H + j]);
                        double c = tanh(gx[2 * H + j] + (a->mode ? r * gh[2 * H + j] : gh[2 * H + j]));
                        hn[j] = (1.0 - z) * c + z * h[j];
                    }
                }
                for (int64_t j = 0; j < H; j++) {
                    h[j] = hn[j];
                    Y[((t * D + d) * NB + b) * H + j] = (float)h[j];
                }
            }
            if (YH)
                for (int64_t j = 0; j < H; j++) YH[(d * NB + b) * H + j] = (float)h[j];
        }
    }
    free(buf);
    return SO_OK;
}

so_status so_ref_gru(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { return run_recurrent(g, n, in, out, 3); }

so_status so_ref_rnn(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out) { return run_recurrent(g, n, in, out, 1); }
