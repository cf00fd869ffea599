#!/usr/bin/env python3
"""test_python.py - the Python package (python/superopt, ctypes over libsuperopt.so): Session on every data/
model against the stored outputs, the onnxruntime-like interface, and every misuse raising superopt.Error with
the library's message. Run with PYTHONPATH pointing at the package (tests/api.sh: the installed one).
Exit 0 when every check passes; prints one line per check."""
import os
import sys
import threading

import numpy as np

import superopt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from optimize_and_run import feed_from as feed_for  # noqa: E402 - the example's reader of data/NAME.in.bin

FAILS = []


def check(name, cond):
    print("%s: %s" % ("ok" if cond else "FAIL", name))
    if not cond:
        FAILS.append(name)


def raises(name, fn, *needles):
    try:
        fn()
    except superopt.Error as e:
        msg = str(e)
        check("%s -> superopt.Error (%s)" % (name, msg), all(n in msg for n in needles))
        return
    except Exception as e:  # noqa: BLE001 - any other exception is the failure reported
        check("%s -> superopt.Error, got %s: %s" % (name, type(e).__name__, e), False)
        return
    check("%s -> superopt.Error, nothing raised" % name, False)


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "data"
    check("version %s" % superopt.version(), superopt.version().count(".") == 2)
    models = sorted(f[:-5] for f in os.listdir(data) if f.endswith(".onnx") and os.path.exists(os.path.join(data, f[:-5] + ".out.bin")))
    check("data/ has models with stored outputs", len(models) >= 5)
    for m in models:
        base = os.path.join(data, m)
        with superopt.Session(base + ".onnx", threads=1) as s:
            outs = s.run(None, feed_for(s, base + ".in.bin"))
            got = np.concatenate([o.ravel() for o in outs])
            want = np.fromfile(base + ".out.bin", np.float32)
            check("Session(%s).run matches the stored outputs" % m, got.size == want.size and np.allclose(got, want, rtol=1e-4, atol=1e-5))
            check("%s: outputs are float32 arrays of the declared shapes" % m,
                  all(o.dtype == np.float32 and list(o.shape) == a.shape for o, a in zip(outs, s.get_outputs())))

    # the onnxruntime-like surface, on DeepAndWide
    path = os.path.join(data, "deepandwide.onnx")
    s = superopt.Session(path)
    ins, outs = s.get_inputs(), s.get_outputs()
    check("get_inputs: names, shapes, types", [a.name for a in ins] == ["ad_emb_packed", "user_emb", "wide"] and
          ins[2].shape == [1, 50] and ins[0].type == "tensor(float)")
    feed = feed_for(s, os.path.join(data, "deepandwide.in.bin"))
    want = np.fromfile(os.path.join(data, "deepandwide.out.bin"), np.float32)
    (y,) = s.run([outs[0].name], feed)
    check("run([name], feed)", np.allclose(y.ravel(), want, rtol=1e-4, atol=1e-5))
    with open(path, "rb") as f:
        sb = superopt.Session(f.read())
    check("Session(bytes)", np.allclose(sb.run(None, feed)[0].ravel(), want, rtol=1e-4, atol=1e-5))
    sb.close()
    nc = dict(feed)
    nc["wide"] = np.asfortranarray(np.tile(feed["wide"], (1, 1)))
    check("non-contiguous input array", np.allclose(s.run(None, nc)[0].ravel(), want, rtol=1e-4, atol=1e-5))
    check("get_stats", s.get_stats()["nodes"] > 0)

    # misuse
    raises("bad path", lambda: superopt.Session(os.path.join(data, "no_such_model.onnx")), "no_such_model.onnx")
    raises("garbage bytes", lambda: superopt.Session(b"not a model"), "<bytes>")
    raises("unknown option", lambda: superopt.Session(path, colour="blue"), "unknown option 'colour'")
    raises("bad threads", lambda: superopt.Session(path, threads=0), "threads=0")
    raises("wrong input name", lambda: s.run(None, dict(feed, nope=feed["wide"])), "no input named 'nope'")
    f2 = dict(feed)
    f2["wrong"] = f2.pop("wide")
    raises("renamed input", lambda: s.run(None, f2), "no input named 'wrong'")
    raises("wrong shape", lambda: s.run(None, dict(feed, wide=feed["wide"].reshape(50, 1))), "'wide' has shape [1, 50], given [50, 1]")
    raises("wrong dtype float64", lambda: s.run(None, dict(feed, wide=feed["wide"].astype(np.float64))), "float64")
    raises("wrong dtype int64", lambda: s.run(None, dict(feed, wide=feed["wide"].astype(np.int64))), "is float32, given int64")
    raises("not an array", lambda: s.run(None, dict(feed, wide=feed["wide"].tolist())), "numpy.ndarray")
    raises("missing input", lambda: s.run(None, {k: v for k, v in feed.items() if k != "wide"}), "'wide' is not given")
    raises("wrong output name", lambda: s.run(["nope"], feed), "no output named 'nope'")
    raises("feed not a dict", lambda: s.run(None, [feed["wide"]]), "dict")
    raises("bad input_shapes", lambda: superopt.Session(path, input_shapes={"wide": [1, 51]}), "wide")
    s.close()
    raises("closed session: run", lambda: s.run(None, feed), "closed")
    raises("closed session: get_inputs", lambda: s.get_inputs(), "closed")
    s.close()  # twice: harmless

    # one session, two threads: concurrent runs are refused (busy) or succeed, never corrupt
    s = superopt.Session(os.path.join(data, "squeezenet.onnx"))
    sfeed = feed_for(s, os.path.join(data, "squeezenet.in.bin"))
    swant = np.fromfile(os.path.join(data, "squeezenet.out.bin"), np.float32)
    results = {"ok": 0, "busy": 0, "bad": 0}

    def loop():
        for _ in range(15):
            try:
                out = s.run(None, sfeed)[0]
                results["ok" if np.allclose(out.ravel(), swant, rtol=1e-4, atol=1e-5) else "bad"] += 1
            except superopt.Error as e:
                results["busy" if e.status == "busy" else "bad"] += 1
    ts = [threading.Thread(target=loop) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check("two threads on one Session: %s" % results, results["bad"] == 0 and results["ok"] > 0)
    s.close()

    raises("optimize: bad path", lambda: superopt.optimize(os.path.join(data, "no_such_model.onnx")), "no_such_model.onnx")
    raises("optimize: bad option", lambda: superopt.optimize(path, search="genetic"), "search=genetic")
    print("test_python: %d failed" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
