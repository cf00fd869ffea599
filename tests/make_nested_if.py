#!/usr/bin/python3
"""make_nested_if.py OUT.onnx DEPTH - writes an ONNX model whose graph holds an If node nested DEPTH deep
(each then_branch holds the next If; each else_branch is a one-node graph), encoded by hand on the
protobuf wire format: the onnx package's serializer and checker recurse per level and are not needed
for a file whose only purpose is to be deep (issue 20 item 1: 3,000 levels overflowed the stack in
protobuf-c's recursive unpack). Deterministic: the same DEPTH gives the same bytes."""
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, payload):
    """A length-delimited field (wire type 2)."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vint(num, v):
    """A varint field (wire type 0)."""
    return varint(num << 3) + varint(v)


def s(text):
    return text.encode()


def value_info(name):
    # ValueInfoProto{name=1, type=2{tensor_type=1{elem_type=1 FLOAT, shape=2{dim=1{dim_value=1: 1}}}}}
    shape = field(2, field(1, vint(1, 1)))
    return field(1, s(name)) + field(2, field(1, vint(1, 1) + shape))


def constant_node(out):
    # NodeProto{output=2, op_type=4 "Constant", attribute=5{name=1 "value_float", f=2, type=20 FLOAT(1)}}
    attr = field(1, s("value_float")) + bytes([0x15]) + b"\x00\x00\x80\x3f" + vint(20, 1)
    return field(2, s(out)) + field(4, s("Constant")) + field(5, attr)


def graph(depth, tag):
    """GraphProto{node=1, name=2, output=12} producing `tag` (a [1] float)."""
    out = f"o{tag}"
    if depth == 0:
        nodes = field(1, constant_node(out))
    else:
        cond = f"c{tag}"
        cond_node = field(2, s(cond)) + field(4, s("Constant")) + field(
            5, field(1, s("value_int")) + vint(3, 1) + vint(20, 2))  # INT attribute 1 (a truthy condition)
        then_attr = field(1, s("then_branch")) + field(6, graph(depth - 1, tag + 1)) + vint(20, 5)
        else_attr = field(1, s("else_branch")) + field(6, graph(0, -(tag + 1))) + vint(20, 5)
        if_node = field(1, s(cond)) + field(2, s(out)) + field(4, s("If")) + field(5, then_attr) + field(5, else_attr)
        nodes = field(1, cond_node) + field(1, if_node)
    return nodes + field(2, s(f"g{tag}")) + field(12, value_info(out))


def model(depth):
    # ModelProto{ir_version=1: 8, opset_import=8{version=2: 13}, graph=7}
    return vint(1, 8) + field(8, vint(2, 13)) + field(7, graph(depth, 0))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    sys.setrecursionlimit(max(10000, 4 * int(sys.argv[2]) + 100))
    with open(sys.argv[1], "wb") as f:
        f.write(model(int(sys.argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
