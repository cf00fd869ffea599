/* onnx_scan.h - wire-format pre-scan of a serialized ONNX ModelProto: how deep its messages nest, measured without recursion before protobuf-c's recursive unpack can overflow the stack. */
#ifndef SO_ONNX_SCAN_H
#define SO_ONNX_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* Deepest message nesting the importer accepts: ModelProto -> GraphProto -> NodeProto ->
   AttributeProto -> GraphProto ... (three levels per subgraph) and TypeProto chains
   (Sequence/Map/Optional element types, two levels each). protobuf-c unpacks one nesting level
   per recursive call (~1 KB of stack at -O0 with sanitizers); 256 levels is ~80 nested
   subgraphs, far beyond real models, and a few hundred KB of stack at most. */
#define SO_ONNX_MAX_NESTING 256

typedef enum so_onnx_scan_result {
    SO_ONNX_SCAN_OK = 0,
    SO_ONNX_SCAN_TOO_DEEP = 1,  /* nesting exceeds the limit at byte *at */
    SO_ONNX_SCAN_MALFORMED = 2, /* not protobuf wire format at byte *at (protobuf-c would refuse it too) */
} so_onnx_scan_result;

/* Scans buf[0..len) as a ModelProto, following only the fields through which ONNX messages can
   nest (graphs, nodes, attributes, functions, training info, value infos and types; tensors and
   strings are skipped by their length), with an explicit stack: constant stack use whatever the
   input. Returns SO_ONNX_SCAN_OK when no path nests deeper than `limit` messages (the
   ModelProto itself is level 1); *at (may be NULL) receives the byte offset of a finding. */
so_onnx_scan_result so_onnx_scan_nesting(const uint8_t *buf, size_t len, int limit, size_t *at);

#endif
