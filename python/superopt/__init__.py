"""superopt - Python bindings for libsuperopt (ctypes, no compile step): run ONNX models on superopt's
CPU runtime with an onnxruntime-like Session, and optimize models with proven rewrite rules.

    import numpy as np, superopt
    report = superopt.optimize("model.onnx", "model.opt.onnx")      # -> Report (report.speedup, ...)
    sess = superopt.Session("model.opt.onnx", threads=1)
    x = sess.get_inputs()[0]
    (y,) = sess.run(None, {x.name: np.zeros(x.shape, np.float32)})

The library is found through $SUPEROPT_LIBRARY (a path), else next to this package in a source tree
(build/libsuperopt.so) or an installed prefix (PREFIX/lib/libsuperopt.so.0), else by the dynamic
loader's search ("libsuperopt.so.0"). Errors raise superopt.Error with the library's message; inputs
of the wrong name, shape or dtype are errors, never converted.
"""
import ctypes
import json
import os
import threading

import numpy as np

__all__ = ["Error", "Session", "NodeArg", "Report", "optimize", "version"]


class Error(Exception):
    """A failure reported by libsuperopt: str(e) is its message, e.status its status name."""

    def __init__(self, message, status="error"):
        super().__init__(message)
        self.status = status


# ---- the library -------------------------------------------------------------------------------

def _candidates():
    env = os.environ.get("SUPEROPT_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "..", "..", "build", "libsuperopt.so"),          # source tree: python/superopt
            os.path.join(here, "..", "..", "..", "libsuperopt.so.0"),           # PREFIX/lib/python3/dist-packages/superopt
            "libsuperopt.so.0"]


def _load():
    errors = []
    for c in _candidates():
        if os.sep in c and not os.path.exists(c):
            errors.append("%s: not found" % c)
            continue
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("superopt: cannot load libsuperopt (" + "; ".join(errors) + "); build it with 'make' or set SUPEROPT_LIBRARY")


_lib = _load()
_c = ctypes
_P = _c.c_void_p


class _TensorInfo(_c.Structure):
    _fields_ = [("name", _c.c_char_p), ("dtype", _c.c_int), ("rank", _c.c_int32),
                ("dims", _c.POINTER(_c.c_int64)), ("bytes", _c.c_size_t)]


class _Tensor(_c.Structure):
    _fields_ = [("name", _c.c_char_p), ("dtype", _c.c_int), ("rank", _c.c_int32),
                ("dims", _c.c_void_p), ("data", _c.c_void_p), ("bytes", _c.c_size_t)]


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_version = _fn("superopt_version", _c.c_char_p)
_status_name = _fn("superopt_status_name", _c.c_char_p, _c.c_int)
_last_error = _fn("superopt_last_error", _c.c_char_p)
_config_new = _fn("superopt_config_new", _c.c_int, _c.POINTER(_P))
_config_set = _fn("superopt_config_set", _c.c_int, _P, _c.c_char_p, _c.c_char_p)
_config_error = _fn("superopt_config_error", _c.c_char_p, _P)
_config_free = _fn("superopt_config_free", None, _P)
_open = _fn("superopt_session_open", _c.c_int, _c.c_char_p, _P, _c.POINTER(_P))
_open_bytes = _fn("superopt_session_open_bytes", _c.c_int, _c.c_char_p, _c.c_size_t, _c.c_char_p, _P, _c.POINTER(_P))
_n_in = _fn("superopt_session_input_count", _c.c_size_t, _P)
_n_out = _fn("superopt_session_output_count", _c.c_size_t, _P)
_in_info = _fn("superopt_session_input_info", _c.c_int, _P, _c.c_size_t, _c.POINTER(_TensorInfo))
_out_info = _fn("superopt_session_output_info", _c.c_int, _P, _c.c_size_t, _c.POINTER(_TensorInfo))
_run = _fn("superopt_session_run", _c.c_int, _P, _P, _c.c_size_t, _P, _c.c_size_t)
_stats = _fn("superopt_session_stats", _c.c_char_p, _P)
_session_error = _fn("superopt_session_error", _c.c_char_p, _P)
_close = _fn("superopt_session_close", None, _P)
_optimize = _fn("superopt_optimize", _c.c_int, _c.c_char_p, _c.c_char_p, _P, _c.POINTER(_P))
_report_json = _fn("superopt_report_json", _c.c_char_p, _P)
_report_text = _fn("superopt_report_text", _c.c_char_p, _P)
_report_free = _fn("superopt_report_free", None, _P)

# superopt_dtype (ONNX codes) <-> NumPy, and onnxruntime's type strings
_NP = {1: np.dtype(np.float32), 6: np.dtype(np.int32), 7: np.dtype(np.int64), 9: np.dtype(np.bool_)}
_CODE = {v: k for k, v in _NP.items()}
_ORT_TYPE = {1: "tensor(float)", 6: "tensor(int32)", 7: "tensor(int64)", 9: "tensor(bool)"}


def version():
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return _version().decode()


def _raise(status, message):
    raise Error(message.decode(errors="replace") if isinstance(message, bytes) else message,
                _status_name(status).decode())


_from_buffer = _c.c_char.from_buffer
_addressof = _c.addressof


def _address(a):
    """Address of a C-contiguous array's first byte (the fast way for writable arrays)."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError):  # read-only or empty
        return a.ctypes.data


def _path(p):
    return os.fsencode(p)


def _config(options):
    """A superopt_config holding options (key -> value; lists repeat the key). Caller frees."""
    cfg = _P()
    st = _config_new(_c.byref(cfg))
    if st:
        _raise(st, _last_error())
    try:
        for key, value in options.items():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, bool):
                    v = int(v)
                st = _config_set(cfg, key.encode(), str(v).encode())
                if st:
                    _raise(st, _config_error(cfg))
    except BaseException:
        _config_free(cfg)
        raise
    return cfg


def _shape_options(input_shapes):
    if input_shapes is None:
        return []
    if not isinstance(input_shapes, dict):
        raise Error("input_shapes must be a dict {input name: shape}", "invalid argument")
    return ["%s=%s" % (name, ",".join(str(int(d)) for d in shape)) for name, shape in input_shapes.items()]


# ---- sessions ----------------------------------------------------------------------------------

class NodeArg:
    """A graph input or output: name, shape (list of ints), type ("tensor(float)", ...) and the
    NumPy dtype, as onnxruntime's NodeArg."""

    def __init__(self, info):
        self.name = info.name.decode()
        self.shape = [int(info.dims[d]) for d in range(info.rank)]
        self.type = _ORT_TYPE[info.dtype]
        self.dtype = _NP[info.dtype]
        self.bytes = int(info.bytes)

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


class Session:
    """A model loaded, planned and ready to run (superopt_session).

    Session(path_or_bytes, threads=1, input_shapes=None, **options): input_shapes fixes symbolic
    input dimensions ({"x": [1, 3, 224, 224]}); other options are the library's session keys
    (dim=["batch=1"], reference=True, profile=True, max_memory="2G"). run() is the one call of
    onnxruntime's InferenceSession: run(output_names or None, {input name: ndarray}) -> [ndarray].
    One run at a time per Session (a concurrent run from another thread raises Error "busy")."""

    def __init__(self, path_or_bytes, threads=1, input_shapes=None, **options):
        self._s = None
        opts = {"threads": threads}
        shapes = _shape_options(input_shapes)
        if shapes:
            opts["input_shape"] = shapes
        opts.update(options)
        cfg = _config(opts)
        try:
            s = _P()
            if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
                data = bytes(path_or_bytes)
                st = _open_bytes(data, len(data), b"<bytes>", cfg, _c.byref(s))
            else:
                st = _open(_path(path_or_bytes), cfg, _c.byref(s))
            if st:
                _raise(st, _last_error())
        finally:
            _config_free(cfg)
        self._s = s
        self._inputs = []
        self._outputs = []
        info = _TensorInfo()
        for i in range(_n_in(s)):
            _in_info(s, i, _c.byref(info))
            self._inputs.append(NodeArg(info))
        for i in range(_n_out(s)):
            _out_info(s, i, _c.byref(info))
            self._outputs.append(NodeArg(info))
        self._in_names = {a.name: a.name.encode() for a in self._inputs}
        # per input: its shape and that shape as int64 dims (a feed of that shape passes them)
        self._in_shape = {a.name: (tuple(a.shape), (_c.c_int64 * max(1, len(a.shape)))(*a.shape)) for a in self._inputs}
        self._out_index = {a.name: k for k, a in enumerate(self._outputs)}
        self._out_names = [a.name.encode() for a in self._outputs]
        self._out_dims = [(_c.c_int64 * max(1, len(a.shape)))(*a.shape) for a in self._outputs]
        # the argument arrays, reused by the runs that get _arr_lock (a run on another thread meanwhile
        # builds its own: the library refuses it as busy or runs it, and it must not see this one's)
        self._in_arr = (_Tensor * max(1, len(self._inputs)))()
        self._out_arr = (_Tensor * max(1, len(self._outputs)))()
        self._arr_lock = threading.Lock()

    def _handle(self):
        if self._s is None:
            raise Error("the session is closed", "invalid argument")
        return self._s

    def get_inputs(self):
        self._handle()
        return list(self._inputs)

    def get_outputs(self):
        self._handle()
        return list(self._outputs)

    def get_stats(self):
        """The session's facts as a dict: nodes, isa, threads, peak_activation_bytes, weight_bytes
        (and the profile table as text when opened with profile=True)."""
        text = _stats(self._handle())
        if text is None:
            _raise(1, _last_error())
        return json.loads(text.decode())

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: input_feed maps every input name to a C-contiguous-able ndarray of exactly
        its dtype and shape; returns the outputs named in output_names (None: all) as new ndarrays."""
        s = self._handle()
        if run_options is not None:
            raise Error("run_options are not supported", "invalid argument")
        if not isinstance(input_feed, dict):
            raise Error("input_feed must be a dict {input name: numpy array}", "invalid argument")
        n_in = len(input_feed)
        if n_in > len(self._inputs):
            unknown = [k for k in input_feed if k not in self._in_names]
            raise Error("no input named %r (the model's: %s)" % (unknown[0] if unknown else "?",
                        ", ".join(repr(a.name) for a in self._inputs)), "invalid argument")
        mine = self._arr_lock.acquire(False)
        try:
            return self._run(s, output_names, input_feed, n_in, mine)
        finally:
            if mine:
                self._arr_lock.release()

    def _run(self, s, output_names, input_feed, n_in, mine):
        arr = self._in_arr if mine else (_Tensor * max(1, len(self._inputs)))()
        keep = []
        for k, (name, value) in enumerate(input_feed.items()):
            if not isinstance(value, np.ndarray):
                raise Error("input %r: expected a numpy.ndarray, given %s" % (name, type(value).__name__), "invalid argument")
            code = _CODE.get(value.dtype)
            if code is None:
                raise Error("input %r: dtype %s is not one of float32, int32, int64, bool" % (name, value.dtype),
                            "invalid argument")
            if not value.flags.c_contiguous:
                value = np.ascontiguousarray(value)  # a copy in C order: same values, same dtype
            keep.append(value)
            t = arr[k]
            enc = self._in_names.get(name)
            t.name = enc if enc is not None else str(name).encode()
            t.dtype = code
            t.rank = value.ndim
            want = self._in_shape.get(name)
            if want is not None and value.shape == want[0]:
                dims = want[1]
            else:  # the library names the mismatch
                dims = value.ctypes.shape_as(_c.c_int64)
                keep.append(dims)
            t.dims = _addressof(dims)
            t.data = _address(value)
            t.bytes = value.nbytes
        if output_names is None:
            idx = range(len(self._outputs))
        else:
            try:
                idx = [self._out_index[n] for n in output_names]
            except KeyError as e:
                raise Error("no output named %r (the model's: %s)" % (e.args[0], ", ".join(repr(a.name) for a in self._outputs)),
                            "invalid argument") from None
        outs = []
        oarr = self._out_arr if mine and len(idx) <= len(self._outputs) else (_Tensor * max(1, len(idx)))()
        for j, k in enumerate(idx):
            a = self._outputs[k]
            y = np.empty(a.shape, a.dtype)
            outs.append(y)
            t = oarr[j]
            t.name = self._out_names[k]
            t.dtype = _CODE[a.dtype]
            t.rank = len(a.shape)
            t.dims = _addressof(self._out_dims[k])
            t.data = _address(y)
            t.bytes = y.nbytes
        st = _run(s, _c.addressof(arr), n_in, _c.addressof(oarr), len(outs))
        if st:
            _raise(st, _session_error(s) if _status_name(st) != b"busy" else _last_error())
        return outs

    def close(self):
        """Frees the session; later calls raise Error. Closing twice is harmless."""
        if self._s is not None:
            _close(self._s)
            self._s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# ---- optimization ------------------------------------------------------------------------------

class Report:
    """What superopt_optimize reports: .data (the JSON as a dict), .json (its text), .text (the summary
    people read); its keys are also attributes: report.speedup, report.cost_after, report.rules_applied,
    report.output (the written model)..."""

    def __init__(self, json_text, text):
        self.json = json_text
        self.text = text
        self.data = json.loads(json_text)

    def __getattr__(self, key):
        try:
            return self.__dict__["data"][key]
        except KeyError:
            raise AttributeError(key) from None

    def __repr__(self):
        return "Report(%s -> %s, speedup %s)" % (self.data.get("model"), self.data.get("output"), self.data.get("speedup"))


def optimize(src, dst=None, search="backtrack", input_shapes=None, **options):
    """Optimizes the ONNX model at src into dst (None: src with .onnx -> .opt.onnx) and returns the Report.
    Options are the library's optimize keys: rules, alpha, budget, work_limit, time_limit, cost ("measured"/"flops"),
    layout, threads, seed, report (a JSON file), dot, dim=[...], allow_unverified, ... Raises Error with the
    library's message when nothing was written (the numeric check failed, a bad model or rule set...)."""
    opts = {"search": search}
    shapes = _shape_options(input_shapes)
    if shapes:
        opts["input_shape"] = shapes
    opts.update({k: v for k, v in options.items() if v is not None})
    cfg = _config(opts)
    rep = _P()
    try:
        st = _optimize(_path(src), None if dst is None else _path(dst), cfg, _c.byref(rep))
        if st:
            _raise(st, _last_error())
    finally:
        _config_free(cfg)
    try:
        return Report(_report_json(rep).decode(), _report_text(rep).decode())
    finally:
        _report_free(rep)
