/* axioms.c - the axiom table, its s-expression parser, and the numeric self-check against the reference kernels. */
#include "axioms.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref.h"
#include "../src/graph.h"
#include "../src/shape.h"

/* Conventions of the intended model (see AXIOMS.md): every operator is total; on inputs that
   do not type-check (or on an ill-typed input) it returns the error tensor ⊥, whose rank and
   dims are -1; dim(t, i) is -1 outside [0, rank). Axioms must hold in that model, which is
   why some carry guards. The self-check tests well-typed instances for equal values and
   perturbed instances for "both sides ill-typed together". */

#define CONV "sh:1..2 sw:1..2 ph:0..1 pw:0..1"
#define CONVG CONV " g:1..2"
#define POOL "kh:1..3 kw:1..3 sh:1..2 sw:1..2 ph:0..1 pw:0..1"

/* Rows that differ only by the operator they are about (and the noun their meaning names it by). */
#define AX_TR_UN(op) {"tr-" #op, "transpose commutes with " #op, "a:n,c,h", "p:perm3", "", "(tr p (" #op " a))", "(" #op " (tr p a))", AXF_BIDIR},
#define AX_TR_BIN(op, noun) {"tr-" #op, "transpose distributes over " noun " (same rank)", "a:n,c,h b:n,c,h", "p:perm3", "(= (rank a) (rank b))", "(tr p (" #op " a b))", "(" #op " (tr p a) (tr p b))", AXF_BIDIR},
#define AX_CONCAT_UN(op) {#op "-concat", #op " distributes over concat", "a:n,c,h b:n,c,h", "ax:0..2", "", "(" #op " (concat ax a b))", "(concat ax (" #op " a) (" #op " b))", AXF_BIDIR},
#define AX_SPL_UN(op) {"spl-" #op, "slicing commutes with " #op, "t:n,c,h", "ax:0..2 s:0..2 n:1..3", "", "(spl ax s n (" #op " t))", "(" #op " (spl ax s n t))", AXF_BIDIR},
#define AX_SPL_BIN(op, noun) {"spl-" #op, "slicing distributes over " noun " of same-shaped tensors", "a:n,c b:n,c", "ax:0..1 s:0..2 n:1..3", "(same a b)", "(spl ax s n (" #op " a b))", "(" #op " (spl ax s n a) (spl ax s n b))", AXF_BIDIR},
#define AX_DIM_UN(op) {"dim-" #op, #op " keeps dims", "a:n,c", "i:-1..2", "", "(dim (" #op " a) i)", "(dim a i)", AXF_SHAPE},
#define AX_DIM_BIN(op, noun) {"dim-" #op, "a " noun " of same-shaped tensors keeps dims", "a:n,c b:n,c", "i:-1..2", "(same a b)", "(dim (" #op " a b) i)", "(dim a i)", AXF_SHAPE},
#define AX_OK_BIN(op, noun) {"ok-" #op, "a well-typed " noun " has well-typed operands", "a:n,c b:n,c", "", "(ok (" #op " a b))", "(and (ok a) (ok b))", "(= 0 0)", AXF_SHAPE},
#define AX_BLK_BIN(op, noun) {"blk-" #op, noun " commutes with blocking (same shapes)", "x:n,c,3,3 y:n,c,3,3", "b:1..4", "(same x y)", "(" #op " (blk b x) (blk b y))", "(blk b (" #op " x y))", AXF_BIDIR},
#define AX_BLK_UN(op) {"blk-" #op, #op " commutes with exact blocking (no padding lanes)", "x:n,c,2,2", "b:1..3", "(and (= (rank x) 4) (= (mod (dim x 1) b) 0))", "(blk b (" #op " x))", "(" #op " (blk b x))", AXF_BIDIR},
#define AX_UNBLK_UN(op) {"unblk-" #op, #op " commutes with unblocking", "y:n,k,2,2,3", "b:3..3 c:1..9", "(and (= (rank y) 5) (= (dim y 4) b) (= c (* b (dim y 1))))", "(unblk b c (" #op " y))", "(" #op " (unblk b c y))", AXF_BIDIR},
#define AX_UNBLK_BIN(op, noun) {"unblk-" #op, noun " commutes with unblocking (same shapes)", "y:n,k,2,2,3 z:n,k,2,2,3", "b:3..3 c:1..9", "(and (same y z) (and (= (rank y) 5) (= (dim y 4) b) (= c (* b (dim y 1)))))", "(unblk b c (" #op " y z))", "(" #op " (unblk b c y) (unblk b c z))", AXF_BIDIR},

static const so_axiom axiom_table[] = {
    /* ---- element-wise algebra ---- */
    {"add-comm", "addition commutes", "a:n,c b:n,c", "", "", "(add a b)", "(add b a)", 0},
    {"add-assoc", "addition is associative", "a:n,c b:n,c c:n,c", "", "", "(add (add a b) c)", "(add a (add b c))", AXF_BIDIR},
    {"mul-comm", "element-wise multiplication commutes", "a:n,c b:n,c", "", "", "(mul a b)", "(mul b a)", 0},
    {"mul-assoc", "element-wise multiplication is associative", "a:n,c b:n,c c:n,c", "", "", "(mul (mul a b) c)", "(mul a (mul b c))", AXF_BIDIR},
    {"mul-add", "multiplication distributes over addition", "a:n,c b:n,c c:n,c", "", "", "(mul a (add b c))", "(add (mul a b) (mul a c))", AXF_BIDIR},
    {"relu-idem", "relu is idempotent", "a:n,c", "", "", "(relu (relu a))", "(relu a)", 0},
    /* ---- transpose ---- */
    {"tr-tr", "two transposes compose into one (pcomp(p,q)[i] = q[p[i]])", "a:n,c,h", "p:perm3 q:perm3", "", "(tr p (tr q a))", "(tr (pcomp p q) a)", 0},
    {"tr-id", "the identity permutation is the identity", "a:n,c,h", "p:perm3", "(= p (pid (rank a)))", "(tr p a)", "a", 0},
    AX_TR_UN(relu)
    AX_TR_UN(sigmoid)
    AX_TR_UN(tanh)
    AX_TR_BIN(add, "addition")
    AX_TR_BIN(mul, "element-wise multiplication")
    {"tr-matmul", "(AB)^T = B^T A^T, swapping the last two axes", "a:2,n,k b:2,k,m", "p:swap3", "(and (= p (pswap (rank a))) (= (rank a) (rank b)))", "(tr p (matmul a b))", "(matmul (tr p b) (tr p a))", AXF_BIDIR},
    {"tr-concat", "concat of transposes is a transpose of a concat on the permuted axis", "a:n,c,h b:n,c,h", "p:perm3 ax:0..2", "", "(concat ax (tr p a) (tr p b))", "(tr p (concat (pidx p ax) a b))", 0},
    {"tr-concat-r", "a transpose of a concat is a concat of transposes on the inverse-permuted axis", "a:n,c,h b:n,c,h", "p:perm3 ax:0..2", "", "(tr p (concat ax a b))", "(concat (pinv p ax) (tr p a) (tr p b))", 0},
    /* ---- matmul ---- */
    {"mm-assoc", "matmul is associative (equal ranks >= 2)", "a:n,k b:k,m c:m,p", "", "(and (= (rank a) (rank b)) (= (rank b) (rank c)) (>= (rank a) 2))", "(matmul (matmul a b) c)", "(matmul a (matmul b c))", AXF_BIDIR},
    {"mm-add-r", "matmul is linear in its right argument", "a:n,k b:k,m c:k,m", "", "(same b c)", "(matmul a (add b c))", "(add (matmul a b) (matmul a c))", AXF_BIDIR},
    {"mm-add-l", "matmul is linear in its left argument", "a:n,k b:n,k c:k,m", "", "(same a b)", "(matmul (add a b) c)", "(add (matmul a c) (matmul b c))", AXF_BIDIR},
    {"mm-concat-cols", "matmul with column-concatenated right side concatenates the results' columns", "a:n,k b:k,m c:k,m", "ax:0..1",
     "(and (= ax (- (rank b) 1)) (= (rank a) (rank b)) (>= (rank a) 2))", "(matmul a (concat ax b c))", "(concat ax (matmul a b) (matmul a c))", AXF_BIDIR},
    {"mm-concat-rows", "matmul with row-concatenated left side concatenates the results' rows", "a:n,k b:n,k c:k,m", "ax:0..1",
     "(and (= ax (- (rank a) 2)) (= (rank a) (rank c)) (>= (rank a) 2))", "(matmul (concat ax a b) c)", "(concat ax (matmul a c) (matmul b c))", AXF_BIDIR},
    {"mm-concat-inner", "matmul of concats along the inner dimension is a sum of matmuls", "a:n,k b:n,k c:k,m d:k,m", "ax:0..1 bx:0..1",
     "(and (= ax (- (rank a) 1)) (= bx (- (rank c) 2)) (= (rank a) (rank c)) (= (rank a) (rank b)) (= (rank c) (rank d)) (= (rank a) 2) (and (= (dim a ax) (dim c bx)) (= (dim a 0) (dim b 0)) (= (dim c 1) (dim d 1))))",
     "(matmul (concat ax a b) (concat bx c d))", "(add (matmul a c) (matmul b d))", 0},
    {"mm-idmat-l", "multiplying by the identity matrix on the left is the identity", "a:n,k", "n:1..4", "(and (= n (dim a 0)) (= (rank a) 2))", "(matmul (cidmat n) a)", "a", 0},
    {"mm-idmat", "multiplying by the identity matrix on the right is the identity", "a:n,k", "n:1..4", "(and (= n (dim a (- (rank a) 1))) (>= (rank a) 2))", "(matmul a (cidmat n))", "a", 0},
    /* ---- convolution (ints: stride h w, pad h w, group) ---- */
    {"conv-add-w", "conv is linear in the kernel", "x:n,c,5,5 w:o,c,k,l v:o,c,k,l", CONVG, "(same w v)", "(conv sh sw ph pw g x (add w v))", "(add (conv sh sw ph pw g x w) (conv sh sw ph pw g x v))", AXF_BIDIR},
    {"conv-add-x", "conv is linear in the input", "x:n,c,5,5 y:n,c,5,5 w:o,c,k,l", CONVG, "(same x y)", "(conv sh sw ph pw g (add x y) w)", "(add (conv sh sw ph pw g x w) (conv sh sw ph pw g y w))", AXF_BIDIR},
    {"conv-concat-w", "conv with output-channel-concatenated kernels concatenates the output channels", "x:n,c,5,5 w:o,c,k,l v:o,c,k,l", CONV, "(and (= (dim w 1) (dim v 1)) (= (dim w 2) (dim v 2)) (= (dim w 3) (dim v 3)))",
     "(conv sh sw ph pw 1 x (concat 0 w v))", "(concat 1 (conv sh sw ph pw 1 x w) (conv sh sw ph pw 1 x v))", AXF_BIDIR},
    {"conv-concat-x", "conv of channel-concatenated input and kernel is the sum of the two convs", "x:n,c,5,5 y:n,c,5,5 w:o,c,k,l v:o,c,k,l", CONV, "(and (= (dim x 1) (dim w 1)) (= (dim x 0) (dim y 0)) (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3)) (= (dim w 0) (dim v 0)) (= (dim w 2) (dim v 2)) (= (dim w 3) (dim v 3)))",
     "(conv sh sw ph pw 1 (concat 1 x y) (concat 1 w v))", "(add (conv sh sw ph pw 1 x w) (conv sh sw ph pw 1 y v))", AXF_BIDIR},
    {"conv-enlarge", "conv with an enlarged (zero-padded) kernel equals conv with the kernel and correspondingly smaller padding", "x:n,c,6,6 w:o,c,k,l", "sh:1..2 sw:1..2 ph:0..2 pw:0..2 g:1..1 kh:1..5 kw:1..5",
     "(and (ok (enlarge kh kw w)) (>= (- ph (div (- kh (dim w 2)) 2)) 0) (>= (- pw (div (- kw (dim w 3)) 2)) 0))",
     "(conv sh sw ph pw g x (enlarge kh kw w))", "(conv sh sw (- ph (div (- kh (dim w 2)) 2)) (- pw (div (- kw (dim w 3)) 2)) g x w)", 0},
    {"conv-idconv", "conv with the identity kernel (stride 1, centred padding) is the identity", "x:n,c,4,4", "c:1..4 kh:1..3 kw:1..3 ph:0..1 pw:0..1",
     "(and (= (rank x) 4) (= c (dim x 1)) (= (mod kh 2) 1) (= (mod kw 2) 1) (= ph (div kh 2)) (= pw (div kw 2)))", "(conv 1 1 ph pw 1 x (cidconv c kh kw))", "x", 0},
    {"enlarge-id", "enlarging a kernel to its own size is the identity", "w:o,c,k,l", "kh:1..4 kw:1..4", "(and (= (rank w) 4) (= kh (dim w 2)) (= kw (dim w 3)))", "(enlarge kh kw w)", "w", 0},
    {"enlarge-enlarge", "enlarging twice is enlarging once to the outer size", "w:o,c,k,l", "kh:1..5 kw:1..5 k2:1..5 l2:1..5", "(ok (enlarge kh kw (enlarge k2 l2 w)))",
     "(enlarge kh kw (enlarge k2 l2 w))", "(enlarge kh kw w)", 0},
    {"enlarge-concat", "enlarge distributes over a concat of output or input channels", "w:o,c,k,l v:o,c,k,l", "kh:1..5 kw:1..5 ax:0..1",
     "(and (>= ax 0) (< ax 2) (= (dim w 2) (dim v 2)) (= (dim w 3) (dim v 3)))", "(enlarge kh kw (concat ax w v))", "(concat ax (enlarge kh kw w) (enlarge kh kw v))", AXF_BIDIR},
    {"enlarge-add", "enlarge distributes over addition of same-shaped kernels", "w:o,c,k,l v:o,c,k,l", "kh:1..5 kw:1..5", "(same w v)", "(enlarge kh kw (add w v))", "(add (enlarge kh kw w) (enlarge kh kw v))", AXF_BIDIR},
    {"enlarge-mul", "enlarge distributes over multiplication of same-shaped kernels (zero padding)", "w:o,c,k,l v:o,c,k,l", "kh:1..5 kw:1..5", "(same w v)", "(enlarge kh kw (mul w v))", "(mul (enlarge kh kw w) (enlarge kh kw v))", AXF_BIDIR},
    {"conv-concat-n", "conv of a batch concat is the batch concat of the convs", "x:n,c,5,5 y:n,c,5,5 w:o,c,k,l", "sh:1..2 sw:1..2 ph:0..1 pw:0..1 g:1..2", "(and (= (dim x 1) (dim y 1)) (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3)))",
     "(conv sh sw ph pw g (concat 0 x y) w)", "(concat 0 (conv sh sw ph pw g x w) (conv sh sw ph pw g y w))", AXF_BIDIR},
    {"bias-concat-n", "bias of a batch or spatial concat is the concat of the biased parts", "a:n,c,3,3 c:n,c,3,3 b:c", "ax:0..3", "(not (= ax 1))",
     "(bias (concat ax a c) b)", "(concat ax (bias a b) (bias c b))", AXF_BIDIR},
    {"spl-bias-n", "a batch or spatial slice of a biased tensor is the biased slice", "a:n,c,3,3 b:c", "ax:0..3 s:0..2 n:1..3", "(not (= ax 1))",
     "(spl ax s n (bias a b))", "(bias (spl ax s n a) b)", AXF_BIDIR},
    {"bias-add", "a bias moves across an addition of same-shaped tensors", "a:n,c,3,3 c:n,c,3,3 b:c", "", "(same a c)",
     "(add a (bias c b))", "(bias (add a c) b)", AXF_BIDIR},
    {"spl-conv-n", "a batch slice of a conv is the conv of the batch slice", "x:n,c,5,5 w:o,c,k,l", CONVG " s:0..2 n:1..3", "",
     "(spl 0 s n (conv sh sw ph pw g x w))", "(conv sh sw ph pw g (spl 0 s n x) w)", AXF_BIDIR},
    {"conv-concat-h", "a conv with kernel height 1, stride 1, no vertical padding commutes with a concat along height", "x:n,c,h,5 y:n,c,i,5 w:o,c,1,l", "sw:1..2 pw:0..1 g:1..2",
     "(and (= (dim w 2) 1) (= (dim x 0) (dim y 0)) (= (dim x 1) (dim y 1)) (= (dim x 3) (dim y 3)))", "(conv 1 sw 0 pw g (concat 2 x y) w)", "(concat 2 (conv 1 sw 0 pw g x w) (conv 1 sw 0 pw g y w))", AXF_BIDIR},
    {"conv-concat-wd", "a conv with kernel width 1, stride 1, no horizontal padding commutes with a concat along width", "x:n,c,5,h y:n,c,5,i w:o,c,k,1", "sh:1..2 ph:0..1 g:1..2",
     "(and (= (dim w 3) 1) (= (dim x 0) (dim y 0)) (= (dim x 1) (dim y 1)) (= (dim x 2) (dim y 2)))", "(conv sh 1 ph 0 g (concat 3 x y) w)", "(concat 3 (conv sh 1 ph 0 g x w) (conv sh 1 ph 0 g y w))", AXF_BIDIR},
    {"spl-conv-h", "a height slice of a conv with kernel height 1, stride 1, no vertical padding is the conv of the slice", "x:n,c,h,5 w:o,c,1,l", "sw:1..2 pw:0..1 g:1..2 s:0..2 n:1..3",
     "(= (dim w 2) 1)", "(spl 2 s n (conv 1 sw 0 pw g x w))", "(conv 1 sw 0 pw g (spl 2 s n x) w)", AXF_BIDIR},
    {"spl-conv-wd", "a width slice of a conv with kernel width 1, stride 1, no horizontal padding is the conv of the slice", "x:n,c,5,h w:o,c,k,1", "sh:1..2 ph:0..1 g:1..2 s:0..2 n:1..3",
     "(= (dim w 3) 1)", "(spl 3 s n (conv sh 1 ph 0 g x w))", "(conv sh 1 ph 0 g (spl 3 s n x) w)", AXF_BIDIR},
    {"bn-concat-n", "batchnorm of a batch or spatial concat is the concat of the batchnorms", "x:n,c,3,3 y:n,c,3,3 s:c b:c m:c v:+c", "eps:925353388..925353388 ax:0..3", "(not (= ax 1))",
     "(bn eps (concat ax x y) s b m v)", "(concat ax (bn eps x s b m v) (bn eps y s b m v))", AXF_BIDIR},
    {"spl-bn-n", "a batch or spatial slice of a batchnorm is the batchnorm of the slice", "x:n,c,3,3 s:c b:c m:c v:+c", "eps:925353388..925353388 ax:0..3 st:0..2 n:1..3", "(not (= ax 1))",
     "(spl ax st n (bn eps x s b m v))", "(bn eps (spl ax st n x) s b m v)", AXF_BIDIR},
    {"avgpool-conv1x1", "average pooling (pads counted) commutes with a 1x1, stride-1, unpadded conv", "x:n,c,5,5 w:o,c,1,1", POOL,
     "(and (= (dim w 2) 1) (= (dim w 3) 1))", "(avgpool kh kw sh sw ph pw (conv 1 1 0 0 1 x w))", "(conv 1 1 0 0 1 (avgpool kh kw sh sw ph pw x) w)", 0},
    /* ---- pooling ---- */
    {"avgpool-conv", "average pooling (pads counted) is a depthwise conv with the constant 1/(kh*kw) kernel", "x:n,c,5,5", POOL,
     "(and (= (rank x) 4) (< ph kh) (< pw kw))", "(avgpool kh kw sh sw ph pw x)", "(conv sh sw ph pw (dim x 1) x (cpool (dim x 1) kh kw))", 0},
    {"conv-cpool", "a depthwise conv with the constant pool kernel is average pooling", "x:n,c,5,5", POOL " c:1..4 g:1..4",
     "(and (= (rank x) 4) (= c (dim x 1)) (= g c) (< ph kh) (< pw kw))", "(conv sh sw ph pw g x (cpool c kh kw))", "(avgpool kh kw sh sw ph pw x)", 0},
    {"maxpool-relu", "relu commutes with max pooling", "x:n,c,5,5", POOL, "", "(relu (maxpool kh kw sh sw ph pw x))", "(maxpool kh kw sh sw ph pw (relu x))", AXF_BIDIR},
    {"avgpool-concat", "average pooling distributes over channel concat", "x:n,c,5,5 y:n,c,5,5", POOL, "(and (= (dim x 0) (dim y 0)) (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3)))", "(avgpool kh kw sh sw ph pw (concat 1 x y))",
     "(concat 1 (avgpool kh kw sh sw ph pw x) (avgpool kh kw sh sw ph pw y))", AXF_BIDIR},
    {"maxpool-concat", "max pooling distributes over channel concat", "x:n,c,5,5 y:n,c,5,5", POOL, "(and (= (dim x 0) (dim y 0)) (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3)))", "(maxpool kh kw sh sw ph pw (concat 1 x y))",
     "(concat 1 (maxpool kh kw sh sw ph pw x) (maxpool kh kw sh sw ph pw y))", AXF_BIDIR},
    /* ---- concat ---- */
    {"concat-assoc", "concat on one axis is associative", "a:n,c,h b:n,c,h c:n,c,h", "ax:0..2", "", "(concat ax (concat ax a b) c)", "(concat ax a (concat ax b c))", AXF_BIDIR},
    AX_CONCAT_UN(relu)
    AX_CONCAT_UN(sigmoid)
    AX_CONCAT_UN(tanh)
    {"add-concat", "addition of concats is the concat of sums (same-shaped parts)", "a:n,c b:n,c c:n,c d:n,c", "ax:0..1", "(and (same a c) (same b d))",
     "(add (concat ax a b) (concat ax c d))", "(concat ax (add a c) (add b d))", AXF_BIDIR},
    {"mul-concat", "multiplication of concats is the concat of products (same-shaped parts)", "a:n,c b:n,c c:n,c d:n,c", "ax:0..1", "(and (same a c) (same b d))",
     "(mul (concat ax a b) (concat ax c d))", "(concat ax (mul a c) (mul b d))", AXF_BIDIR},
    {"concat-concat", "concats on two different axes commute (block matrix)", "a:n,c b:n,c c:n,c d:n,c", "ax:0..1 bx:0..1",
     "(and (not (= ax bx)) (= (dim a bx) (dim c bx)) (= (dim a ax) (dim b ax)))",
     "(concat ax (concat bx a b) (concat bx c d))", "(concat bx (concat ax a c) (concat ax b d))", AXF_BIDIR},
    /* ---- split (spl ax start len t: the slice [start, start+len) of axis ax) ---- */
    {"spl-concat-l", "the first part of a concat is its left operand", "a:n,c b:n,c", "ax:0..1 s:0..0 n:1..4", "(and (= s 0) (= n (dim a ax)) (ok (concat ax a b)))", "(spl ax s n (concat ax a b))", "a", 0},
    {"spl-concat-r", "the second part of a concat is its right operand", "a:n,c b:n,c", "ax:0..1 s:1..4 n:1..4", "(and (= s (dim a ax)) (= n (dim b ax)) (ok (concat ax a b)))", "(spl ax s n (concat ax a b))", "b", 0},
    {"spl-concat-in-l", "a slice inside the left operand of a concat is a slice of it", "a:n,c b:n,c", "ax:0..1 s:0..3 n:1..4", "(and (>= s 0) (<= (+ s n) (dim a ax)) (ok (concat ax a b)))",
     "(spl ax s n (concat ax a b))", "(spl ax s n a)", 0},
    {"spl-concat-in-r", "a slice inside the right operand of a concat is a slice of it", "a:n,c b:n,c", "ax:0..1 s:0..6 n:1..4", "(and (>= s (dim a ax)) (ok (concat ax a b)))",
     "(spl ax s n (concat ax a b))", "(spl ax (- s (dim a ax)) n b)", 0},
    {"concat-spl", "adjacent slices concatenate into one slice", "t:n,c,h", "ax:0..2 s:0..2 n:1..3 s2:1..4 m:1..3", "(and (= s2 (+ s n)) (>= s 0) (>= n 1) (>= m 1))",
     "(concat ax (spl ax s n t) (spl ax s2 m t))", "(spl ax s (+ n m) t)", 0},
    {"spl-full", "the full slice is the identity", "t:n,c,h", "ax:0..2 s:0..0 n:1..4", "(and (= s 0) (= n (dim t ax)) (>= ax 0) (< ax (rank t)))", "(spl ax s n t)", "t", 0},
    {"spl-spl", "a slice of a slice is a slice", "t:n,c,h", "ax:0..2 s:0..2 n:1..3 s2:0..2 n2:1..4", "(and (>= s 0) (>= n 1) (<= (+ s n) n2) (ok (spl ax s2 n2 t)))",
     "(spl ax s n (spl ax s2 n2 t))", "(spl ax (+ s s2) n t)", 0},
    AX_SPL_UN(relu)
    AX_SPL_UN(sigmoid)
    AX_SPL_UN(tanh)
    AX_SPL_BIN(add, "addition")
    AX_SPL_BIN(mul, "multiplication")
    {"spl-conv", "slicing conv output channels slices the kernel", "x:n,c,5,5 w:o,c,k,l", CONV " s:0..2 n:1..3", "", "(spl 1 s n (conv sh sw ph pw 1 x w))", "(conv sh sw ph pw 1 x (spl 0 s n w))", AXF_BIDIR},
    {"spl-mm-cols", "slicing matmul columns slices the right operand", "a:n,k b:k,m", "ax:0..1 s:0..2 n:1..3", "(and (= ax (- (rank b) 1)) (= (rank a) (rank b)) (>= (rank a) 2))",
     "(spl ax s n (matmul a b))", "(matmul a (spl ax s n b))", AXF_BIDIR},
    {"spl-mm-rows", "slicing matmul rows slices the left operand", "a:n,k b:k,m", "ax:0..1 s:0..2 n:1..3", "(and (= ax (- (rank a) 2)) (= (rank a) (rank b)) (>= (rank a) 2))",
     "(spl ax s n (matmul a b))", "(matmul (spl ax s n a) b)", AXF_BIDIR},
    {"spl-tr", "a slice of a transpose is a transpose of a slice on the permuted axis", "t:n,c,h", "p:perm3 ax:0..2 s:0..2 n:1..3", "", "(spl ax s n (tr p t))", "(tr p (spl (pidx p ax) s n t))", 0},
    {"spl-avgpool", "slicing channels commutes with average pooling", "x:n,c,5,5", POOL " s:0..2 n:1..3", "", "(spl 1 s n (avgpool kh kw sh sw ph pw x))", "(avgpool kh kw sh sw ph pw (spl 1 s n x))", AXF_BIDIR},
    {"spl-maxpool", "slicing channels commutes with max pooling", "x:n,c,5,5", POOL " s:0..2 n:1..3", "", "(spl 1 s n (maxpool kh kw sh sw ph pw x))", "(maxpool kh kw sh sw ph pw (spl 1 s n x))", AXF_BIDIR},
    {"spl-enlarge", "slicing output channels commutes with enlarge", "w:o,c,k,l", "kh:1..5 kw:1..5 s:0..2 n:1..3", "", "(spl 0 s n (enlarge kh kw w))", "(enlarge kh kw (spl 0 s n w))", AXF_BIDIR},
    /* ---- rank-3 activation @ matrix (numpy broadcasting of the right operand; Linear on [s0,s1,h]) ---- */
    {"mm3-concat-cols", "a rank-3 activation times column-concatenated matrices concatenates the last axis", "a:n,r,k b:k,m c:k,q", "ax:1..1",
     "(and (= ax 1) (= (rank a) 3) (= (rank b) 2) (= (rank c) 2))", "(matmul a (concat ax b c))", "(concat 2 (matmul a b) (matmul a c))", AXF_BIDIR},
    {"spl-mm3-cols", "slicing the last axis of a rank-3 activation times a matrix slices the matrix columns", "a:n,r,k b:k,m", "st:0..2 l:1..3",
     "(and (= (rank a) 3) (= (rank b) 2))", "(spl 2 st l (matmul a b))", "(matmul a (spl 1 st l b))", AXF_BIDIR},
    {"mm3-concat-rows", "a concat of rank-3 activations on a leading axis times a matrix is the concat of the products", "a:n,r,k b:n,r,k c:k,m", "ax:0..1",
     "(and (>= ax 0) (<= ax 1) (= (rank a) 3) (= (rank c) 2))", "(matmul (concat ax a b) c)", "(concat ax (matmul a c) (matmul b c))", AXF_BIDIR},
    {"spl-mm3-rows", "slicing a leading axis of a rank-3 activation times a matrix slices the activation", "a:n,r,k b:k,m", "ax:0..1 st:0..2 l:1..3",
     "(and (>= ax 0) (<= ax 1) (= (rank a) 3) (= (rank b) 2))", "(spl ax st l (matmul a b))", "(matmul (spl ax st l a) b)", AXF_BIDIR},
    {"spl-bias3", "slicing the last axis of a bias-added rank-3 activation slices the bias vector and the activation", "b:k a:n,r,k", "st:0..2 l:1..3",
     "(and (= (rank a) 3) (= (rank b) 1) (= (dim b 0) (dim a 2)))", "(spl 2 st l (add b a))", "(add (spl 0 st l b) (spl 2 st l a))", AXF_BIDIR},
    {"mm3-assoc", "a rank-3 activation times two matrices associates", "a:n,r,k b:k,m c:m,p", "",
     "(and (= (rank a) 3) (= (rank b) 2) (= (rank c) 2))", "(matmul (matmul a b) c)", "(matmul a (matmul b c))", AXF_BIDIR},
    /* ---- conv bias (bias t b: add b[c] to channel c of t) and batchnorm (bn e x scale bias mean var, e = epsilon's float bits) ---- */
    {"spl-bias", "slicing channels of a biased tensor slices the bias", "a:n,c,3,3 b:c", "s:0..2 n:1..3", "(= (dim a 1) (dim b 0))",
     "(spl 1 s n (bias a b))", "(bias (spl 1 s n a) (spl 0 s n b))", AXF_BIDIR},
    {"bias-concat", "bias of a channel concat is the concat of the biased parts", "a:n,c,3,3 c:n,d,3,3 b:c d:d", "", "(= (dim a 1) (dim b 0))",
     "(bias (concat 1 a c) (concat 0 b d))", "(concat 1 (bias a b) (bias c d))", AXF_BIDIR},
    {"bn-concat", "batchnorm of a channel concat is the concat of batchnorms with the split parameters", "x:n,c,3,3 y:n,d,3,3 s:c b:c m:c v:+c t:d e:d f:d g:+d",
     "eps:925353388..925353388", "(and (= (dim x 1) (dim s 0)) (= (dim x 1) (dim b 0)) (= (dim x 1) (dim m 0)) (= (dim x 1) (dim v 0)))",
     "(bn eps (concat 1 x y) (concat 0 s t) (concat 0 b e) (concat 0 m f) (concat 0 v g))", "(concat 1 (bn eps x s b m v) (bn eps y t e f g))", AXF_BIDIR},
    {"spl-bn", "slicing channels of a batchnorm slices its parameters", "x:n,c,3,3 s:c b:c m:c v:+c", "eps:925353388..925353388 st:0..2 n:1..3",
     "(and (= (dim x 1) (dim s 0)) (= (dim x 1) (dim b 0)) (= (dim x 1) (dim m 0)) (= (dim x 1) (dim v 0)))",
     "(spl 1 st n (bn eps x s b m v))", "(bn eps (spl 1 st n x) (spl 0 st n s) (spl 0 st n b) (spl 0 st n m) (spl 0 st n v))", AXF_BIDIR},
    /* conv+BN folding: the definition of the internal weight operators bnfold_w (bnfw) and
       bnfold_b (bnfb; bnfbc with a conv bias): bn(conv(x, w) [+ c]) = conv(x, bnfw(w), bnfb) */
    {"bn-fold", "batchnorm of a conv is the conv with folded kernel and bias (bnfold_w, bnfold_b)",
     "x:n,c,5,5 w:o,c,k,l s:o b:o m:o v:+o", CONVG " eps:925353388..925353388", "(ok (bn eps (conv sh sw ph pw g x w) s b m v))",
     "(bn eps (conv sh sw ph pw g x w) s b m v)", "(bias (conv sh sw ph pw g x (bnfw eps w s v)) (bnfb eps s b m v))", 0},
    {"bn-fold-bias", "batchnorm of a biased conv is the conv with folded kernel and folded bias",
     "x:n,c,5,5 w:o,c,k,l s:o b:o m:o v:+o d:o", CONVG " eps:925353388..925353388", "(ok (bn eps (bias (conv sh sw ph pw g x w) d) s b m v))",
     "(bn eps (bias (conv sh sw ph pw g x w) d) s b m v)", "(bias (conv sh sw ph pw g x (bnfw eps w s v)) (bnfbc eps s b m v d))", 0},
    /* ---- scalars (rank-0 tensors) ---- */
    {"mm-scalar-l", "a scalar factor moves out of matmul's left operand", "a:n,k b:k,m s:", "", "(= (rank s) 0)", "(matmul (mul a s) b)", "(mul (matmul a b) s)", AXF_BIDIR},
    {"mm-scalar-r", "a scalar factor moves out of matmul's right operand", "a:n,k b:k,m s:", "", "(= (rank s) 0)", "(matmul a (mul b s))", "(mul (matmul a b) s)", AXF_BIDIR},
    {"tr-scalar", "a scalar factor commutes with transpose", "a:n,c s:", "p:perm2", "(= (rank s) 0)", "(tr p (mul a s))", "(mul (tr p a) s)", AXF_BIDIR},
    {"conv-scalar-x", "a scalar factor moves out of conv's input", "x:n,c,5,5 w:o,c,k,l s:", CONVG, "(= (rank s) 0)", "(conv sh sw ph pw g (mul x s) w)", "(mul (conv sh sw ph pw g x w) s)", AXF_BIDIR},
    {"conv-scalar-w", "a scalar factor moves out of conv's kernel", "x:n,c,5,5 w:o,c,k,l s:", CONVG, "(= (rank s) 0)", "(conv sh sw ph pw g x (mul w s))", "(mul (conv sh sw ph pw g x w) s)", AXF_BIDIR},
    {"concat-scalar", "a common scalar factor moves out of a concat", "a:n,c b:n,c s:", "ax:0..1", "(= (rank s) 0)", "(concat ax (mul a s) (mul b s))", "(mul (concat ax a b) s)", AXF_BIDIR},
    {"spl-scalar", "a scalar factor commutes with slicing", "a:n,c s:", "ax:0..1 st:0..2 n:1..3", "(= (rank s) 0)", "(spl ax st n (mul a s))", "(mul (spl ax st n a) s)", AXF_BIDIR},
    {"avgpool-scalar", "a scalar factor commutes with average pooling", "x:n,c,5,5 s:", POOL, "(= (rank s) 0)", "(avgpool kh kw sh sw ph pw (mul x s))", "(mul (avgpool kh kw sh sw ph pw x) s)", AXF_BIDIR},
    {"enlarge-scalar", "a scalar factor commutes with enlarge", "w:o,c,k,l s:", "kh:1..5 kw:1..5", "(= (rank s) 0)", "(enlarge kh kw (mul w s))", "(mul (enlarge kh kw w) s)", AXF_BIDIR},
    /* ---- shapes ---- */
    /* ---- blocked-channel layout (NCHWc): blk b x = nchwc_in (zero padding lanes), unblk b c y = nchwc_out, convb = conv_nchwc ---- */
    {"unblk-blk", "unblocking a blocked tensor gives it back", "x:n,c,3,3", "b:1..4 c:1..4", "(and (= (rank x) 4) (= c (dim x 1)))", "(unblk b c (blk b x))", "x", 0},
    {"ok-blk", "a blocked tensor is well-typed when its rank-4 source is", "x:n,c,3,3", "b:1..4", "", "(ok (blk b x))", "(and (ok x) (= (rank x) 4))", AXF_SHAPE},
    {"blk-relu", "relu commutes with blocking (relu keeps the zero padding lanes)", "x:n,c,3,3", "b:1..4", "", "(blk b (relu x))", "(relu (blk b x))", AXF_BIDIR},
    {"unblk-sigmoid-blk", "sigmoid on a blocked tensor, unblocked, is sigmoid (the padding lanes it changes are dropped)", "x:n,c,3,3", "b:1..4",
     "(= (rank x) 4)", "(unblk b (dim x 1) (sigmoid (blk b x)))", "(sigmoid x)", 0},
    {"unblk-tanh-blk", "tanh on a blocked tensor, unblocked, is tanh", "x:n,c,3,3", "b:1..4", "(= (rank x) 4)", "(unblk b (dim x 1) (tanh (blk b x)))", "(tanh x)", 0},
    AX_BLK_BIN(add, "addition")
    AX_BLK_BIN(mul, "element-wise multiplication")
    {"convb-def", "a conv on a blocked input is the blocked conv", "x:n,c,5,5 w:o,c,k,l", CONVG " b:1..4", "(= (dim x 1) (* (dim w 1) g))",
     "(convb sh sw ph pw g (blk b x) w)", "(blk b (conv sh sw ph pw g x w))", AXF_BIDIR},
    /* exact blocking (channels a multiple of the block, no padding lanes): what the generated layout rules use */
    {"blk-unblk", "blocking an unblocked exactly blocked tensor gives it back", "y:n,k,2,2,3", "b:3..3 c:1..9", "(and (= (rank y) 5) (= (dim y 4) b) (= c (* b (dim y 1))))", "(blk b (unblk b c y))", "y", 0},
    AX_UNBLK_UN(relu)
    AX_UNBLK_UN(sigmoid)
    AX_UNBLK_UN(tanh)
    AX_UNBLK_BIN(add, "addition")
    AX_UNBLK_BIN(mul, "element-wise multiplication")
    AX_BLK_UN(sigmoid)
    AX_BLK_UN(tanh)
    {"blk-concat", "channel concat of blocked tensors is the blocked channel concat when the first is exactly blocked", "x:n,c,2,2 y:n,d,2,2", "b:1..3",
     "(and (= (rank x) 4) (= (rank y) 4) (= (mod (dim x 1) b) 0))", "(concat 1 (blk b x) (blk b y))", "(blk b (concat 1 x y))", AXF_BIDIR},
    {"unblk-concat", "channel concat of unblocked tensors is the unblocked channel concat when the first is exactly blocked", "y:n,k,2,2,3 z:n,l,2,2,3", "b:3..3 c:1..9 d:1..9",
     "(and (and (= (rank y) 5) (= (dim y 4) b) (= c (* b (dim y 1)))) (= (rank z) 5) (= (dim z 4) b) (= (dim z 1) (div (+ d (- b 1)) b)))", "(concat 1 (unblk b c y) (unblk b d z))", "(unblk b (+ c d) (concat 1 y z))", 0},
    AX_DIM_UN(relu)
    AX_DIM_UN(sigmoid)
    AX_DIM_UN(tanh)
    AX_DIM_BIN(add, "sum")
    AX_DIM_BIN(mul, "product")
    {"dim-concat-ax", "concat adds the dims on its axis", "a:n,c b:n,c", "ax:0..1", "(ok (concat ax a b))", "(dim (concat ax a b) ax)", "(+ (dim a ax) (dim b ax))", AXF_SHAPE},
    {"dim-concat", "concat keeps the other dims", "a:n,c b:n,c", "ax:0..1 i:-1..2", "(and (ok (concat ax a b)) (not (= i ax)))", "(dim (concat ax a b) i)", "(dim a i)", AXF_SHAPE},
    {"dim-spl-ax", "a slice has its length on its axis", "t:n,c", "ax:0..1 s:0..2 n:1..3", "(ok (spl ax s n t))", "(dim (spl ax s n t) ax)", "n", AXF_SHAPE},
    {"dim-spl", "a slice keeps the other dims", "t:n,c", "ax:0..1 s:0..2 n:1..3 i:-1..2", "(and (ok (spl ax s n t)) (not (= i ax)))", "(dim (spl ax s n t) i)", "(dim t i)", AXF_SHAPE},
    {"dim-conv-o", "conv output channels are the kernel's output channels", "x:n,c,5,5 w:o,c,k,l", CONVG, "(ok (conv sh sw ph pw g x w))", "(dim (conv sh sw ph pw g x w) 1)", "(dim w 0)", AXF_SHAPE},
    {"dim-conv-n", "conv keeps the batch", "x:n,c,5,5 w:o,c,k,l", CONVG, "(ok (conv sh sw ph pw g x w))", "(dim (conv sh sw ph pw g x w) 0)", "(dim x 0)", AXF_SHAPE},
    {"dim-mm-cols", "matmul takes its columns from the right operand", "a:n,k b:k,m", "", "(and (ok (matmul a b)) (= (rank a) (rank b)))", "(dim (matmul a b) (- (rank b) 1))", "(dim b (- (rank b) 1))", AXF_SHAPE},
    {"dim-mm-rows", "matmul takes its rows from the left operand", "a:n,k b:k,m", "", "(and (ok (matmul a b)) (= (rank a) (rank b)) (>= (rank a) 2))", "(dim (matmul a b) (- (rank a) 2))", "(dim a (- (rank a) 2))", AXF_SHAPE},
    {"dim-mm3", "a rank-3 activation times a matrix keeps the leading dims", "a:n,r,k b:k,m", "i:0..1", "(and (ok (matmul a b)) (= (rank a) 3) (= (rank b) 2) (>= i 0) (<= i 1))", "(dim (matmul a b) i)", "(dim a i)", AXF_SHAPE},
    {"dim-mm3-cols", "a rank-3 activation times a matrix takes its last dim from the matrix", "a:n,r,k b:k,m", "", "(and (ok (matmul a b)) (= (rank a) 3) (= (rank b) 2))", "(dim (matmul a b) 2)", "(dim b 1)", AXF_SHAPE},
    {"rank-mm3", "a rank-3 activation times a matrix has rank 3", "a:n,r,k b:k,m", "", "(and (ok (matmul a b)) (= (rank a) 3) (= (rank b) 2))", "(rank (matmul a b))", "3", AXF_SHAPE},
    {"dim-bias3", "a bias vector added to a rank-3 activation keeps the activation's dims", "b:k a:n,r,k", "i:-1..3", "(and (= (rank a) 3) (= (rank b) 1) (= (dim b 0) (dim a 2)))", "(dim (add b a) i)", "(dim a i)", AXF_SHAPE},
    {"rank-bias3", "a bias vector added to a rank-3 activation has rank 3", "b:k a:n,r,k", "", "(and (= (rank a) 3) (= (rank b) 1) (= (dim b 0) (dim a 2)))", "(rank (add b a))", "3", AXF_SHAPE},
    {"dim-bias", "bias keeps dims", "a:n,c,3,3 b:c", "i:-1..4", "(ok (bias a b))", "(dim (bias a b) i)", "(dim a i)", AXF_SHAPE},
    {"dim-bn", "batchnorm keeps dims", "x:n,c,3,3 s:c b:c m:c v:+c", "eps:925353388..925353388 i:-1..4", "(ok (bn eps x s b m v))", "(dim (bn eps x s b m v) i)", "(dim x i)", AXF_SHAPE},
    {"dim-scalar", "multiplying by a scalar keeps dims", "a:n,c s:", "i:-1..2", "(= (rank s) 0)", "(dim (mul a s) i)", "(dim a i)", AXF_SHAPE},
    {"ok-concat", "a well-typed concat has well-typed operands (operators are strict in the error value)", "a:n,c b:n,c", "ax:0..1", "(ok (concat ax a b))", "(and (ok a) (ok b))", "(= 0 0)", AXF_SHAPE},
    {"ok-spl", "a well-typed slice has a well-typed operand", "t:n,c", "ax:0..1 s:0..2 n:1..3", "(ok (spl ax s n t))", "(ok t)", "(= 0 0)", AXF_SHAPE},
    AX_OK_BIN(add, "sum")
    AX_OK_BIN(mul, "product")
    {"ok-matmul", "a well-typed matmul has well-typed operands", "a:n,k b:k,m", "", "(ok (matmul a b))", "(and (ok a) (ok b))", "(= 0 0)", AXF_SHAPE},
    {"ok-conv", "a well-typed conv has well-typed operands", "x:n,c,5,5 w:o,c,k,l", CONVG, "(ok (conv sh sw ph pw g x w))", "(and (ok x) (ok w))", "(= 0 0)", AXF_SHAPE},
    {"ok-relu", "a well-typed relu has a well-typed operand", "a:n,c", "", "(ok (relu a))", "(ok a)", "(= 0 0)", AXF_SHAPE},
    {"ok-tr", "a well-typed transpose has a well-typed operand", "a:n,c,h", "p:perm3", "(ok (tr p a))", "(ok a)", "(= 0 0)", AXF_SHAPE},
    {"rank-relu", "relu keeps the rank", "a:n,c", "", "", "(rank (relu a))", "(rank a)", AXF_SHAPE},
    {"rank-concat", "concat keeps the rank", "a:n,c b:n,c", "ax:0..1", "(ok (concat ax a b))", "(rank (concat ax a b))", "(rank a)", AXF_SHAPE},
    {"rank-spl", "a slice keeps the rank", "t:n,c", "ax:0..1 s:0..2 n:1..3", "(ok (spl ax s n t))", "(rank (spl ax s n t))", "(rank t)", AXF_SHAPE},
    {"rank-add", "a sum of same-shaped tensors keeps the rank", "a:n,c b:n,c", "", "(same a b)", "(rank (add a b))", "(rank a)", AXF_SHAPE},
    /* the blocked pools' definitions (verifier/encode.c z3_pool_nchwc): every lane pooled, zero padding lanes stay zero */
    {"maxpoolb-def", "max pooling on a blocked value is the blocked max pooling", "x:n,c,6,7", POOL " b:1..4",
     "(and (= (rank x) 4) (< ph kh) (< pw kw))", "(maxpoolb kh kw sh sw ph pw 0 (blk b x))", "(blk b (maxpool kh kw sh sw ph pw x))", AXF_BIDIR},
    {"maxpoolcb-def", "ceil_mode max pooling (no pads) on a blocked value is the blocked ceil_mode max pooling", "x:n,c,6,7",
     "kh:1..3 kw:1..3 sh:1..2 sw:1..2 b:1..4", "(= (rank x) 4)", "(maxpoolb kh kw sh sw 0 0 1 (blk b x))", "(blk b (maxpoolc kh kw sh sw 0 0 x))", AXF_BIDIR},
    {"gapb-def", "global average pooling on a blocked value is the blocked global average pooling", "x:n,c,3,4", "b:1..4",
     "(= (rank x) 4)", "(gapb (blk b x))", "(blk b (gap x))", AXF_BIDIR},
};

/* ------------------------------------------------------------------ parsing */

static ax_parsed parsed[SO_ARRAY_LEN(axiom_table)];
static pthread_once_t parse_once = PTHREAD_ONCE_INIT;
static so_arena parse_arena;

typedef struct pstate {
    const char *s;
    ax_parsed *ap;
    const char *what;
} pstate;

static void die(const pstate *p, const char *msg)
{
    fprintf(stderr, "superopt: internal error: axiom '%s' %s: %s near \"%.20s\"\n", p->ap->ax->name, p->what, msg, p->s);
    abort();
}

static void skip_ws(pstate *p)
{
    while (isspace((unsigned char)*p->s)) p->s++;
}

static ax_term *parse_term(pstate *p)
{
    skip_ws(p);
    ax_term *t = so_arena_alloc(&parse_arena, sizeof *t);
    if (*p->s == '(') {
        p->s++;
        skip_ws(p);
        size_t k = 0;
        while (*p->s && !isspace((unsigned char)*p->s) && *p->s != '(' && *p->s != ')') {
            if (k + 1 >= sizeof t->fn) die(p, "function name too long");
            t->fn[k++] = *p->s++;
        }
        t->kind = AX_APP;
        for (;;) {
            skip_ws(p);
            if (*p->s == ')') {
                p->s++;
                break;
            }
            if (!*p->s) die(p, "missing ')'");
            if (t->n >= 8) die(p, "too many arguments");
            t->arg[t->n++] = parse_term(p);
        }
        return t;
    }
    char tok[16];
    size_t k = 0;
    while (*p->s && !isspace((unsigned char)*p->s) && *p->s != '(' && *p->s != ')') {
        if (k + 1 >= sizeof tok) die(p, "token too long");
        tok[k++] = *p->s++;
    }
    tok[k] = 0;
    if (!k) die(p, "empty token");
    if (isdigit((unsigned char)tok[0]) || tok[0] == '-') {
        t->kind = AX_INT;
        t->val = strtoll(tok, NULL, 10);
        return t;
    }
    for (int i = 0; i < p->ap->n_vars; i++)
        if (!strcmp(tok, p->ap->var_names[i])) {
            t->kind = AX_TVAR;
            t->var = i;
            return t;
        }
    for (int i = 0; i < p->ap->n_params; i++)
        if (!strcmp(tok, p->ap->param_names[i])) {
            t->kind = AX_IVAR;
            t->var = i;
            return t;
        }
    die(p, "undeclared variable");
    return NULL;
}

static ax_term *parse_str(ax_parsed *ap, const char *s, const char *what)
{
    if (!s || !*s) return NULL;
    pstate p = {s, ap, what};
    ax_term *t = parse_term(&p);
    skip_ws(&p);
    if (*p.s) die(&p, "trailing text");
    return t;
}

/* "a:n,c b:k" -> names and shapes; "ax:0..1 p:perm3" -> names and domains. */
static int parse_decls(const char *s, char names[][8], char vals[][32], size_t val_size)
{
    int n = 0;
    while (s && *s) {
        while (*s == ' ') s++;
        if (!*s) break;
        const char *colon = strchr(s, ':');
        const char *end = strchr(s, ' ');
        if (!end) end = s + strlen(s);
        if (!colon || colon > end || n >= AX_MAX_VARS || (size_t)(colon - s) >= 8 || (size_t)(end - colon - 1) >= val_size) {
            fprintf(stderr, "superopt: internal error: bad axiom declaration \"%s\"\n", s);
            abort();
        }
        memcpy(names[n], s, (size_t)(colon - s));
        names[n][colon - s] = 0;
        memcpy(vals[n], colon + 1, (size_t)(end - colon - 1));
        vals[n][end - colon - 1] = 0;
        n++;
        s = end;
    }
    return n;
}

static void parse_all(void)
{
    for (size_t k = 0; k < SO_ARRAY_LEN(axiom_table); k++) {
        ax_parsed *ap = &parsed[k];
        ap->ax = &axiom_table[k];
        ap->n_vars = parse_decls(ap->ax->vars, ap->var_names, ap->var_shape, sizeof ap->var_shape[0]);
        ap->n_params = parse_decls(ap->ax->params, ap->param_names, ap->param_dom, sizeof ap->param_dom[0]);
        ap->guard = parse_str(ap, ap->ax->guard, "guard");
        ap->lhs = parse_str(ap, ap->ax->lhs, "lhs");
        ap->rhs = parse_str(ap, ap->ax->rhs, "rhs");
    }
}

int so_axioms_get(const ax_parsed **out)
{
    pthread_once(&parse_once, parse_all);
    *out = parsed;
    return (int)SO_ARRAY_LEN(axiom_table);
}

/* ------------------------------------------------------------------ permutations */

int64_t so_perm_code(int rank, const int64_t *perm)
{
    int64_t c = 0, m = 1;
    for (int i = 0; i < rank; i++, m *= 8) c += perm[i] * m;
    return (int64_t)rank * 4096 + c;
}

int so_perm_decode(int64_t code, int64_t *perm)
{
    if (code < 4096 || code >= 5 * 4096) return -1;
    int r = (int)(code / 4096);
    int64_t c = code % 4096;
    int seen[4] = {0};
    for (int i = 0; i < r; i++) {
        perm[i] = c % 8;
        c /= 8;
        if (perm[i] >= r || seen[perm[i]]) return -1;
        seen[perm[i]] = 1;
    }
    return c ? -1 : r;
}

/* ------------------------------------------------------------------ numeric evaluation */

#define BOT (-1)

typedef struct nval {
    int is_int;
    int64_t i;       /* Int / Bool value */
    int32_t node;    /* tensor: graph node, or BOT */
} nval;

typedef struct nctx {
    so_graph *g;
    const int32_t *var_node;
    const int64_t *param;
    int error;       /* internal error (message set) */
} nctx;

static nval nint(int64_t v) { return (nval){1, v, 0}; }
static nval nten(int32_t node) { return (nval){0, 0, node}; }

static const so_shape *nshape(nctx *c, int32_t node) { return &c->g->nodes[node].out[0]; }

/* Adds a node; returns its index or BOT if shape inference rejects it. */
static int32_t add_node(nctx *c, so_op op, const int32_t *in, int n_in, const so_attr *a)
{
    so_edge e[6];
    for (int k = 0; k < n_in; k++) {
        if (in[k] == BOT) return BOT;
        e[k] = (so_edge){in[k], 0};
    }
    const so_attr *ia = so_model_attr(c->g->model, a);
    int32_t id = so_graph_add(c->g, op, e, n_in, 1, ia, -1, NULL);
    if (so_graph_infer(c->g, id) != SO_OK) {
        c->g->n_nodes--;
        return BOT;
    }
    return id;
}

static int64_t perm_comp(int64_t p, int64_t q)
{
    int64_t a[8], b[8], r[8];
    int ra = so_perm_decode(p, a), rb = so_perm_decode(q, b);
    if (ra < 0 || ra != rb) return -1;
    for (int i = 0; i < ra; i++) r[i] = b[a[i]];
    return so_perm_code(ra, r);
}

static int64_t perm_idx(int64_t p, int64_t i)
{
    int64_t a[8];
    int r = so_perm_decode(p, a);
    if (r < 0 || i < 0 || i >= r) return -1;
    return a[i];
}

static int64_t perm_inv_idx(int64_t p, int64_t j)
{
    int64_t a[8];
    int r = so_perm_decode(p, a);
    for (int i = 0; i < r; i++)
        if (a[i] == j) return i;
    return -1;
}

static int64_t perm_swap(int64_t r)
{
    int64_t a[8];
    if (r < 2 || r > 4) return -1;
    for (int i = 0; i < r; i++) a[i] = i;
    a[r - 2] = r - 1;
    a[r - 1] = r - 2;
    return so_perm_code((int)r, a);
}

static int64_t perm_id(int64_t r)
{
    int64_t a[8];
    if (r < 1 || r > 4) return -1;
    for (int i = 0; i < r; i++) a[i] = i;
    return so_perm_code((int)r, a);
}

static int same_shape(nctx *c, int32_t a, int32_t b)
{
    if (a == BOT || b == BOT) return a == b;
    return so_shape_eq(nshape(c, a), nshape(c, b));
}

static int64_t ndim(nctx *c, int32_t t, int64_t i)
{
    if (t == BOT) return -1;
    const so_shape *s = nshape(c, t);
    return i >= 0 && i < s->rank ? s->dim[i] : -1;
}

static nval neval(nctx *c, const ax_term *t)
{
    nval a[8];
    switch (t->kind) {
    case AX_TVAR: return nten(c->var_node[t->var]);
    case AX_IVAR: return nint(c->param[t->var]);
    case AX_INT: return nint(t->val);
    case AX_APP: break;
    }
    const char *f = t->fn;
    /* lazy connectives first */
    if (!strcmp(f, "and")) {
        for (int k = 0; k < t->n; k++)
            if (!neval(c, t->arg[k]).i) return nint(0);
        return nint(1);
    }
    for (int k = 0; k < t->n; k++) a[k] = neval(c, t->arg[k]);
    int64_t x = t->n > 0 ? a[0].i : 0, y = t->n > 1 ? a[1].i : 0;
    if (!strcmp(f, "not")) return nint(!x);
    if (!strcmp(f, "or")) return nint(x || y);
    if (!strcmp(f, "=")) return nint(x == y);
    if (!strcmp(f, ">=")) return nint(x >= y);
    if (!strcmp(f, "<=")) return nint(x <= y);
    if (!strcmp(f, ">")) return nint(x > y);
    if (!strcmp(f, "<")) return nint(x < y);
    if (!strcmp(f, "+")) return nint(x + y);
    if (!strcmp(f, "-")) return nint(x - y);
    if (!strcmp(f, "*")) return nint(x * y);
    if (!strcmp(f, "div")) return nint(y ? (x - ((x % y) + y) % y) / y : 0); /* floor (Euclidean for y > 0) */
    if (!strcmp(f, "mod")) return nint(y ? ((x % y) + y) % y : 0);
    if (!strcmp(f, "ok")) return nint(a[0].node != BOT);
    if (!strcmp(f, "same")) return nint(same_shape(c, a[0].node, a[1].node));
    if (!strcmp(f, "rank")) return nint(a[0].node == BOT ? -1 : nshape(c, a[0].node)->rank);
    if (!strcmp(f, "dim")) return nint(ndim(c, a[0].node, a[1].i));
    if (!strcmp(f, "pcomp")) return nint(perm_comp(x, y));
    if (!strcmp(f, "pidx")) return nint(perm_idx(x, y));
    if (!strcmp(f, "pinv")) return nint(perm_inv_idx(x, y));
    if (!strcmp(f, "pswap")) return nint(perm_swap(x));
    if (!strcmp(f, "pid")) return nint(perm_id(x));

    /* tensor operators */
    so_attr at;
    memset(&at, 0, sizeof at);
    int32_t in[8];
    for (int k = 0; k < t->n; k++) in[k] = a[k].node;
    so_op op;
    int n_in;
    if (!strcmp(f, "add") || !strcmp(f, "mul") || !strcmp(f, "matmul")) {
        op = f[0] == 'a' ? SO_OP_ADD : f[1] == 'u' ? SO_OP_MUL : SO_OP_MATMUL;
        n_in = 2;
    } else if (!strcmp(f, "relu") || !strcmp(f, "sigmoid") || !strcmp(f, "tanh")) {
        op = f[0] == 'r' ? SO_OP_RELU : f[0] == 's' ? SO_OP_SIGMOID : SO_OP_TANH;
        n_in = 1;
    } else if (!strcmp(f, "conv")) {
        op = SO_OP_CONV;
        at.stride[0] = (int32_t)a[0].i, at.stride[1] = (int32_t)a[1].i;
        at.pad[0] = at.pad[2] = (int32_t)a[2].i;
        at.pad[1] = at.pad[3] = (int32_t)a[3].i;
        at.dilation[0] = at.dilation[1] = 1;
        at.group = (int32_t)a[4].i;
        if (a[0].i < 1 || a[1].i < 1 || a[2].i < 0 || a[3].i < 0 || a[4].i < 1) return nten(BOT);
        in[0] = a[5].node, in[1] = a[6].node;
        n_in = 2;
    } else if (!strcmp(f, "tr")) {
        op = SO_OP_TRANSPOSE;
        int r = so_perm_decode(a[0].i, at.ints);
        if (r < 0) return nten(BOT);
        at.n_ints = r;
        in[0] = a[1].node;
        n_in = 1;
    } else if (!strcmp(f, "concat")) {
        op = SO_OP_CONCAT;
        at.axis = (int32_t)a[0].i;
        if (a[1].node == BOT || a[0].i < 0 || a[0].i >= nshape(c, a[1].node)->rank) return nten(BOT);
        in[0] = a[1].node, in[1] = a[2].node;
        n_in = 2;
    } else if (!strcmp(f, "spl")) {
        op = SO_OP_SLICE;
        if (a[3].node == BOT || a[0].i < 0 || a[0].i >= nshape(c, a[3].node)->rank || a[1].i < 0 || a[2].i < 1 ||
            a[1].i + a[2].i > ndim(c, a[3].node, a[0].i))
            return nten(BOT);
        at.n_ints = 4;
        at.ints[0] = a[0].i, at.ints[1] = a[1].i, at.ints[2] = a[1].i + a[2].i, at.ints[3] = 1;
        in[0] = a[3].node;
        n_in = 1;
    } else if (!strcmp(f, "enlarge")) {
        op = SO_OP_ENLARGE;
        at.kernel[0] = (int32_t)a[0].i, at.kernel[1] = (int32_t)a[1].i;
        in[0] = a[2].node;
        n_in = 1;
    } else if (!strcmp(f, "avgpool") || !strcmp(f, "maxpool")) {
        op = f[0] == 'a' ? SO_OP_AVGPOOL : SO_OP_MAXPOOL;
        at.kernel[0] = (int32_t)a[0].i, at.kernel[1] = (int32_t)a[1].i;
        at.stride[0] = (int32_t)a[2].i, at.stride[1] = (int32_t)a[3].i;
        at.pad[0] = at.pad[2] = (int32_t)a[4].i;
        at.pad[1] = at.pad[3] = (int32_t)a[5].i;
        at.count_include_pad = 1;
        if (a[2].i < 1 || a[3].i < 1) return nten(BOT);
        in[0] = a[6].node;
        n_in = 1;
    } else if (!strcmp(f, "maxpoolc") || !strcmp(f, "maxpoolb")) { /* ceil_mode max pooling (no pads); blocked max pooling */
        int blocked = f[7] == 'b';
        op = blocked ? SO_OP_MAXPOOL_NCHWC : SO_OP_MAXPOOL;
        at.kernel[0] = (int32_t)a[0].i, at.kernel[1] = (int32_t)a[1].i;
        at.stride[0] = (int32_t)a[2].i, at.stride[1] = (int32_t)a[3].i;
        at.pad[0] = at.pad[2] = (int32_t)a[4].i;
        at.pad[1] = at.pad[3] = (int32_t)a[5].i;
        at.dilation[0] = at.dilation[1] = 1;
        at.ceil_mode = blocked ? (int32_t)a[6].i : 1;
        if (a[2].i < 1 || a[3].i < 1 || (at.ceil_mode && (a[4].i || a[5].i))) return nten(BOT);
        in[0] = a[blocked ? 7 : 6].node;
        n_in = 1;
    } else if (!strcmp(f, "gap") || !strcmp(f, "gapb")) { /* global average pooling, plain or blocked */
        op = f[3] == 'b' ? SO_OP_GLOBALAVGPOOL_NCHWC : SO_OP_GLOBALAVGPOOL;
        in[0] = a[0].node;
        n_in = 1;
    } else if (!strcmp(f, "cpool") || !strcmp(f, "cidconv")) {
        op = f[1] == 'p' ? SO_OP_CONST_POOL : SO_OP_CONST_IDCONV;
        for (int k = 0; k < 3; k++)
            if (a[k].i < 1) return nten(BOT);
        at.n_ints = 4;
        at.ints[0] = a[0].i, at.ints[1] = op == SO_OP_CONST_POOL ? 1 : a[0].i, at.ints[2] = a[1].i, at.ints[3] = a[2].i;
        n_in = 0;
    } else if (!strcmp(f, "bias")) {
        /* per-channel bias = conv with the 1x1 identity kernel and that bias */
        if (a[0].node == BOT || a[1].node == BOT || nshape(c, a[0].node)->rank != 4) return nten(BOT);
        so_attr ka;
        memset(&ka, 0, sizeof ka);
        int64_t C = ndim(c, a[0].node, 1);
        ka.n_ints = 4;
        ka.ints[0] = ka.ints[1] = C, ka.ints[2] = ka.ints[3] = 1;
        int32_t kid = add_node(c, SO_OP_CONST_IDCONV, NULL, 0, &ka);
        at.stride[0] = at.stride[1] = 1;
        at.dilation[0] = at.dilation[1] = 1;
        at.group = 1;
        in[0] = a[0].node, in[1] = kid, in[2] = a[1].node;
        op = SO_OP_CONV;
        n_in = 3;
    } else if (!strcmp(f, "bn")) {
        op = SO_OP_BATCHNORM;
        uint32_t bits = (uint32_t)a[0].i;
        memcpy(&at.epsilon, &bits, sizeof bits);
        for (int k = 0; k < 5; k++) in[k] = a[k + 1].node;
        n_in = 5;
    } else if (!strcmp(f, "bnfw") || !strcmp(f, "bnfb") || !strcmp(f, "bnfbc")) {
        op = f[3] == 'w' ? SO_OP_BNFOLD_W : SO_OP_BNFOLD_B;
        uint32_t bits = (uint32_t)a[0].i;
        memcpy(&at.epsilon, &bits, sizeof bits);
        n_in = t->n - 1;
        for (int k = 0; k < n_in; k++) in[k] = a[k + 1].node;
    } else if (!strcmp(f, "blk") || !strcmp(f, "unblk")) { /* blocked layout: block b (, channels C) */
        op = f[0] == 'b' ? SO_OP_NCHWC_IN : SO_OP_NCHWC_OUT;
        if (a[0].i < 1 || a[0].i > 64 || (op == SO_OP_NCHWC_OUT && a[1].i < 1)) return nten(BOT);
        at.n_ints = op == SO_OP_NCHWC_IN ? 1 : 2;
        at.ints[0] = a[0].i, at.ints[1] = op == SO_OP_NCHWC_OUT ? a[1].i : 0;
        in[0] = a[at.n_ints].node;
        n_in = 1;
    } else if (!strcmp(f, "convb")) { /* conv on a blocked input, as conv */
        op = SO_OP_CONV_NCHWC;
        at.stride[0] = (int32_t)a[0].i, at.stride[1] = (int32_t)a[1].i;
        at.pad[0] = at.pad[2] = (int32_t)a[2].i;
        at.pad[1] = at.pad[3] = (int32_t)a[3].i;
        at.dilation[0] = at.dilation[1] = 1;
        at.group = (int32_t)a[4].i;
        if (a[0].i < 1 || a[1].i < 1 || a[2].i < 0 || a[3].i < 0 || a[4].i < 1) return nten(BOT);
        in[0] = a[5].node, in[1] = a[6].node;
        n_in = 2;
    } else if (!strcmp(f, "cidmat")) {
        op = SO_OP_CONST_IDMAT;
        if (a[0].i < 1) return nten(BOT);
        at.n_ints = 2;
        at.ints[0] = at.ints[1] = a[0].i;
        n_in = 0;
    } else {
        c->error = 1;
        so_errorf("unknown function '%s' in axiom", f);
        return nten(BOT);
    }
    return nten(add_node(c, op, in, n_in, &at));
}

/* Draws a parameter value from its domain. */
static int64_t draw_param(const char *dom, uint64_t *rng)
{
    int64_t perm[4];
    if (!strncmp(dom, "perm", 4) || !strncmp(dom, "swap", 4)) {
        int r = atoi(dom + 4);
        if (dom[0] == 's') return perm_swap(r);
        for (int i = 0; i < r; i++) perm[i] = i;
        for (int i = r - 1; i > 0; i--) {
            int j = (int)(so_rng_next(rng) % (uint64_t)(i + 1));
            int64_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        return so_perm_code(r, perm);
    }
    const char *dots = strstr(dom, "..");
    int64_t lo = strtoll(dom, NULL, 10), hi = dots ? strtoll(dots + 2, NULL, 10) : lo;
    return lo + (int64_t)(so_rng_next(rng) % (uint64_t)(hi - lo + 1));
}

/* Template shape -> concrete shape; symbols are shared across variables of one trial. */
static so_shape draw_shape(const char *tmpl, int64_t *sym_val /* [26] */)
{
    so_shape s;
    memset(&s, 0, sizeof s);
    s.dtype = SO_F32;
    const char *p = tmpl;
    if (*p == '+') p++; /* positive values (batchnorm variances) */
    while (*p && s.rank < SO_MAX_RANK) {
        if (isdigit((unsigned char)*p)) {
            s.dim[s.rank++] = strtoll(p, (char **)&p, 10);
        } else {
            s.dim[s.rank++] = sym_val[(*p - 'a') % 26];
            p++;
        }
        if (*p == ',') p++;
    }
    return s;
}

static int close_enough(const float *x, const float *y, int64_t n, int64_t *where)
{
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (!(d <= 1e-4 * (1.0 + fabs((double)x[i])))) {
            *where = i;
            return 0;
        }
    }
    return 1;
}

/* One trial. Returns 0 skipped (guard false), 1 agreed well-typed, 2 agreed both ill-typed,
   -1 disagreement (why set), -2 internal error (message set). */
static int trial(const ax_parsed *ap, uint64_t *rng, int perturb, char *why, size_t why_len)
{
    int result = -2;
    int64_t sym[26];
    for (int i = 0; i < 26; i++) sym[i] = 1 + (int64_t)(so_rng_next(rng) % 4);
    int64_t param[AX_MAX_VARS];
    for (int i = 0; i < ap->n_params; i++) param[i] = draw_param(ap->param_dom[i], rng);
    so_model *m = so_model_new("<axiom>");
    m->n_inputs = ap->n_vars;
    m->inputs = so_arena_alloc(&m->arena, sizeof *m->inputs * (size_t)(ap->n_vars ? ap->n_vars : 1));
    for (int i = 0; i < ap->n_vars; i++) {
        m->inputs[i].name = ap->var_names[i];
        m->inputs[i].shape = draw_shape(ap->var_shape[i], sym);
    }
    if (perturb && ap->n_vars > 0) {
        so_shape *s = &m->inputs[so_rng_next(rng) % (uint64_t)ap->n_vars].shape;
        if (s->rank > 0) s->dim[so_rng_next(rng) % (uint64_t)s->rank] = 1 + (int64_t)(so_rng_next(rng) % 4);
    }
    m->n_outputs = 2;
    so_graph *g = so_graph_new(m);
    int32_t var_node[AX_MAX_VARS];
    float *inbuf[AX_MAX_VARS] = {0}, *outbuf[2] = {0};
    for (int i = 0; i < ap->n_vars; i++) {
        var_node[i] = so_graph_add(g, SO_OP_INPUT, NULL, 0, 1, NULL, i, NULL);
        if (so_graph_infer(g, var_node[i]) != SO_OK) goto done;
        int64_t n = so_shape_numel(&m->inputs[i].shape);
        inbuf[i] = so_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        so_rng_fill(rng, inbuf[i], (size_t)n);
        if (ap->var_shape[i][0] == '+')
            for (int64_t j = 0; j < n; j++) inbuf[i][j] = fabsf(inbuf[i][j]) + 0.1f;
    }
    nctx c = {g, var_node, param, 0};
    if (ap->guard) {
        nval gv = neval(&c, ap->guard);
        if (c.error) goto done;
        if (!gv.i) {
            result = 0;
            goto done;
        }
    }
    nval l = neval(&c, ap->lhs), r = neval(&c, ap->rhs);
    if (c.error) goto done;
    char pbuf[160] = "";
    for (int i = 0; i < ap->n_params; i++) {
        size_t used = strlen(pbuf);
        snprintf(pbuf + used, sizeof pbuf - used, "%s%s=%lld", i ? " " : "", ap->param_names[i], (long long)param[i]);
    }
    for (int i = 0; i < ap->n_vars; i++) {
        char sb[64];
        size_t used = strlen(pbuf);
        snprintf(pbuf + used, sizeof pbuf - used, " %s%s", ap->var_names[i], so_shape_str(&m->inputs[i].shape, sb, sizeof sb));
    }
    if (ap->ax->flags & AXF_SHAPE) {
        if (l.i != r.i) {
            snprintf(why, why_len, "%s: %lld vs %lld at %s", ap->ax->name, (long long)l.i, (long long)r.i, pbuf);
            result = -1;
        } else {
            result = 1;
        }
        goto done;
    }
    if (l.node == BOT || r.node == BOT) {
        if (l.node == r.node) {
            result = 2;
        } else {
            snprintf(why, why_len, "%s: %s side ill-typed, the other not, at %s", ap->ax->name, l.node == BOT ? "left" : "right", pbuf);
            result = -1;
        }
        goto done;
    }
    if (!so_shape_eq(nshape(&c, l.node), nshape(&c, r.node))) {
        char s1[64], s2[64];
        snprintf(why, why_len, "%s: shapes %s vs %s at %s", ap->ax->name, so_shape_str(nshape(&c, l.node), s1, sizeof s1),
                 so_shape_str(nshape(&c, r.node), s2, sizeof s2), pbuf);
        result = -1;
        goto done;
    }
    g->outputs[0] = (so_edge){l.node, 0};
    g->outputs[1] = (so_edge){r.node, 0};
    int64_t n = so_shape_numel(nshape(&c, l.node));
    outbuf[0] = so_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    outbuf[1] = so_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (so_ref_run(g, (const float *const *)inbuf, outbuf) != SO_OK) goto done;
    int64_t where = 0;
    if (!close_enough(outbuf[0], outbuf[1], n, &where)) {
        snprintf(why, why_len, "%s: values differ at element %lld (%g vs %g) at %s", ap->ax->name, (long long)where,
                 (double)outbuf[0][where], (double)outbuf[1][where], pbuf);
        result = -1;
    } else {
        result = 1;
    }
done:
    for (int i = 0; i < ap->n_vars; i++) free(inbuf[i]);
    free(outbuf[0]);
    free(outbuf[1]);
    so_graph_free(g);
    so_model_free(m);
    return result;
}

so_status so_axiom_selfcheck(int k, int trials, uint64_t seed, int *ok, int *n_evaluated, char *why, size_t why_len)
{
    const ax_parsed *all;
    int n = so_axioms_get(&all);
    if (k < 0 || k >= n) return so_errorf("no axiom #%d", k);
    const ax_parsed *ap = &all[k];
    uint64_t rng = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(k + 1));
    int evaluated = 0;
    *ok = 1;
    if (why && why_len) why[0] = 0;
    char tmp[512];
    for (int t = 0; t < trials; t++) {
        int perturb = (t % 4) == 3, r = 0;
        /* unperturbed trials resample (up to 40 times) until the guard holds and the instance
           type-checks, so that narrow guards still get evaluated instances */
        for (int attempt = 0; attempt < (perturb ? 1 : 40); attempt++) {
            r = trial(ap, &rng, perturb, tmp, sizeof tmp);
            if (r != 0 && r != 2) break;
        }
        if (r == -2) return so_errorf("axiom '%s': %s", ap->ax->name, so_error());
        if (r == -1) {
            *ok = 0;
            if (why) snprintf(why, why_len, "%s", tmp);
            break;
        }
        if (r == 1) evaluated++;
    }
    if (*ok && evaluated < 3) {
        *ok = 0;
        if (why) snprintf(why, why_len, "%s: only %d of %d instances were well-typed and passed the guard", ap->ax->name, evaluated, trials);
    }
    if (n_evaluated) *n_evaluated = evaluated;
    return SO_OK;
}
