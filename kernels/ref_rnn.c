/* ref_rnn.c - reference kernels of the recurrent operators LSTM, GRU and RNN (ops.def; declared in ref.h): plain loops, double accumulators. */
#include "ref_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The length of batch b's sequence: seq_lens[b] (int64, or float when an exporter typed it so) clamped to
   [0, T]; T without seq_lens. */
static int64_t seq_len(const void *SL, int sl_i64, int64_t b, int64_t T)
{
    int64_t L = T;
    if (SL) {
        float lf = sl_i64 ? 0.0f : ((const float *)SL)[b];
        L = sl_i64 ? ((const int64_t *)SL)[b] : (lf >= 0.0f && lf <= (float)T) ? (int64_t)lf : T;
    }
    return L < 0 ? 0 : L > T ? T : L;
}

/* One activation function of a recurrent node (ops.h so_ract) with its alpha and beta, and the node's clip
   (0: none) applied to the function's input. */
typedef struct ract {
    int kind;
    double alpha, beta, clip;
} ract;

/* Function `slot` of direction d (cnt per direction): from attr.ints when the node lists them, else def. */
static ract act_of(const so_attr *a, int64_t d, int cnt, int slot, int def)
{
    ract f = {def, 0.0, 0.0, a->clip_max};
    if (a->n_ints > 0) {
        const int64_t *v = a->ints + 3 * (d * cnt + slot);
        f.kind = (int)v[0], f.alpha = so_bits_to_f32(v[1]), f.beta = so_bits_to_f32(v[2]);
    }
    return f;
}

static double act(ract f, double x)
{
    if (f.clip > 0.0) x = x < -f.clip ? -f.clip : x > f.clip ? f.clip : x; /* NaN stays */
    switch (f.kind) {
    case SO_RACT_RELU: return x > 0.0 ? x : 0.0;
    case SO_RACT_SIGMOID: return sigmoid_d(x);
    case SO_RACT_AFFINE: return f.alpha * x + f.beta;
    case SO_RACT_LEAKYRELU: return x >= 0.0 ? x : f.alpha * x;
    case SO_RACT_THRESHOLDEDRELU: return x > f.alpha ? x : 0.0;
    case SO_RACT_SCALEDTANH: return f.alpha * tanh(f.beta * x);
    case SO_RACT_HARDSIGMOID: {
        double y = f.alpha * x + f.beta;
        return y < 0.0 ? 0.0 : y > 1.0 ? 1.0 : y;
    }
    case SO_RACT_ELU: return x >= 0.0 ? x : f.alpha * (exp(x) - 1.0);
    case SO_RACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case SO_RACT_SOFTPLUS: return x > 30.0 ? x : log1p(exp(x));
    default: return tanh(x);
    }
}

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
    if (!buf) return ref_fail(g, n, "out of memory");
    double *gx = buf, *gh = buf + G, *h = buf + 2 * G, *rh = h + H, *hn = rh + H, *xv = hn + H;
    memset(Y, 0, (size_t)(T * D * NB * H) * sizeof *Y);
    for (int64_t d = 0; d < D; d++) {
        const int reverse = a->direction == 1 || d == 1;
        const float *W = Wt + d * G * I, *R = Rt + d * G * H;
        const float *WB = Bt ? Bt + d * 2 * G : NULL, *RB = Bt ? Bt + d * 2 * G + G : NULL;
        /* RNN: f (default: mode); GRU: f for z and r, g for the candidate */
        const ract f = act_of(a, d, (int)gates == 1 ? 1 : 2, 0, gates == 1 ? a->mode : SO_RACT_SIGMOID);
        const ract gg = act_of(a, d, 2, 1, SO_RACT_TANH);
        for (int64_t b = 0; b < NB; b++) {
            const int64_t L = seq_len(SL, sl_i64, b, T);
            for (int64_t j = 0; j < H; j++) h[j] = H0 ? H0[(d * NB + b) * H + j] : 0.0;
            for (int64_t s = 0; s < L; s++) {
                const int64_t t = reverse ? L - 1 - s : s;
                for (int64_t k = 0; k < I; k++) xv[k] = X[(t * NB + b) * I + k];
                matvec(W, WB, xv, G, I, gx);
                matvec(R, RB, h, G, H, gh);
                if (gates == 1) {
                    for (int64_t j = 0; j < H; j++) hn[j] = act(f, gx[j] + gh[j]);
                } else {
                    /* ONNX gate order z, r, h; linear_before_reset = 0 applies r to h before the product with Rh */
                    if (!a->mode) {
                        for (int64_t j = 0; j < H; j++) rh[j] = act(f, gx[H + j] + gh[H + j]) * h[j];
                        matvec(R + 2 * H * H, RB ? RB + 2 * H : NULL, rh, H, H, gh + 2 * H);
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double z = act(f, gx[j] + gh[j]), r = act(f, gx[H + j] + gh[H + j]);
                        double c = act(gg, gx[2 * H + j] + (a->mode ? r * gh[2 * H + j] : gh[2 * H + j]));
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

REF_VIA(gru, run_recurrent(g, n, in, out, 3))

REF_VIA(rnn, run_recurrent(g, n, in, out, 1))

so_status so_ref_lstm(const so_graph *g, const so_node *n, const so_tensor *in, so_tensor *out)
{
    const so_attr *a = n->attr;
    const int64_t T = in[0].shape.dim[0], NB = in[0].shape.dim[1], I = in[0].shape.dim[2];
    const int64_t D = a->direction == 2 ? 2 : 1, H = in[2].shape.dim[2];
#define OPT(k) (n->n_in > (k) && in[k].data ? (const void *)in[k].data : NULL)
    const float *X = in[0].data, *Wt = in[1].data, *Rt = in[2].data, *Bt = OPT(3), *H0 = OPT(5), *C0 = OPT(6), *Pt = OPT(7);
    const void *SL = OPT(4);
    const int sl_i64 = SL && in[4].shape.dtype == SO_I64;
#undef OPT
    float *Y = out[0].data, *YH = n->n_out > 1 ? out[1].data : NULL, *YC = n->n_out > 2 ? out[2].data : NULL;
    double *buf = malloc((size_t)(6 * H) * sizeof *buf);
    if (!buf) return ref_fail(g, n, "out of memory");
    double *gt = buf, *h = buf + 4 * H, *c = buf + 5 * H;
    memset(Y, 0, (size_t)(T * D * NB * H) * sizeof *Y);
    for (int64_t d = 0; d < D; d++) {
        const int reverse = a->direction == 1 || d == 1;
        const float *W = Wt + d * 4 * H * I, *R = Rt + d * 4 * H * H;
        const float *B = Bt ? Bt + d * 8 * H : NULL, *P = Pt ? Pt + d * 3 * H : NULL;
        /* f for the gates i o f, g for the cell input, h for the output (unclipped: ONNX Runtime clips only gate inputs) */
        const ract f = act_of(a, d, 3, 0, SO_RACT_SIGMOID), gg = act_of(a, d, 3, 1, SO_RACT_TANH);
        ract hh = act_of(a, d, 3, 2, SO_RACT_TANH);
        hh.clip = 0.0;
        for (int64_t b = 0; b < NB; b++) {
            const int64_t L = seq_len(SL, sl_i64, b, T);
            for (int64_t j = 0; j < H; j++) {
                h[j] = H0 ? H0[(d * NB + b) * H + j] : 0.0;
                c[j] = C0 ? C0[(d * NB + b) * H + j] : 0.0;
            }
            for (int64_t s = 0; s < L; s++) {
                const int64_t t = reverse ? L - 1 - s : s;
                const float *x = X + (t * NB + b) * I;
                for (int64_t r = 0; r < 4 * H; r++) {
                    double acc = B ? (double)B[r] + (double)B[4 * H + r] : 0.0;
                    for (int64_t k = 0; k < I; k++) acc += (double)W[r * I + k] * x[k];
                    for (int64_t k = 0; k < H; k++) acc += (double)R[r * H + k] * h[k];
                    gt[r] = acc;
                }
                for (int64_t j = 0; j < H; j++) {
                    /* ONNX gate order: i, o, f, c; peepholes P: i, o, f; input_forget (mode): f = 1 - i */
                    double gi = act(f, gt[j] + (P ? P[j] * c[j] : 0.0));
                    double gf = a->mode ? 1.0 - gi : act(f, gt[2 * H + j] + (P ? P[2 * H + j] * c[j] : 0.0));
                    double gc = act(gg, gt[3 * H + j]);
                    double cn = gf * c[j] + gi * gc;
                    double go = act(f, gt[H + j] + (P ? P[H + j] * cn : 0.0));
                    c[j] = cn;
                    h[j] = go * act(hh, cn);
                }
                for (int64_t j = 0; j < H; j++) Y[((t * D + d) * NB + b) * H + j] = (float)h[j];
            }
            for (int64_t j = 0; j < H; j++) {
                if (YH) YH[(d * NB + b) * H + j] = (float)h[j];
                if (YC) YC[(d * NB + b) * H + j] = (float)c[j];
            }
        }
    }
    free(buf);
    return SO_OK;
}
