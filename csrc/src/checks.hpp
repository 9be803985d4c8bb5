// Argument checks at the binding boundary: nothing from Python is trusted.
//
// Integers: a Python int (or anything with __index__, such as a NumPy integer; never a bool)
// in [0, 2**64 - 1], else TypeError / ValueError with the same text as
// traveller_env.rules.rng.check_u64.
//
// Arrays: the pattern every batched call uses. The caller owns the buffers; the core reads and
// writes them in place and allocates nothing. A buffer must have exactly the expected dtype,
// number of dimensions and extents, be C-contiguous on the CPU and, when written to, writable;
// anything else is refused with a ValueError naming the argument and what was expected. No
// implicit conversion ever happens: a converted copy of an output buffer would silently drop the
// results.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

namespace traveller::binding {

namespace nb = nanobind;

inline std::string py_repr(nb::handle h) { return nb::repr(h).c_str(); }

inline std::string py_type_name(nb::handle h) {
    return nb::str(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(h.ptr()))).attr("__name__"))
        .c_str();
}

// A Python int in [0, 2**64 - 1] as uint64; `name` is the argument's name for the message.
inline std::uint64_t to_u64(nb::handle value, const char* name) {
    // The message is built only when refusing (these checks sit on hot paths).
    auto allowed = [name] { return std::string(name) + " must be an int in [0, 2**64 - 1], got "; };
    if (PyBool_Check(value.ptr())) {
        throw nb::type_error((allowed() + py_type_name(value) + " " + py_repr(value)).c_str());
    }
    PyObject* index = PyNumber_Index(value.ptr());
    if (index == nullptr) {
        PyErr_Clear();
        throw nb::type_error((allowed() + py_type_name(value) + " " + py_repr(value)).c_str());
    }
    nb::object as_int = nb::steal(index);
    const unsigned long long v = PyLong_AsUnsignedLongLong(as_int.ptr());
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();  // OverflowError: negative or too large
        throw nb::value_error((allowed() + py_repr(as_int)).c_str());
    }
    return static_cast<std::uint64_t>(v);
}

// A Python int in [0, limit] as int64 (counts such as a number of dice).
inline std::int64_t to_count(nb::handle value, const char* name, std::int64_t limit) {
    auto allowed = [name, limit] {
        return std::string(name) + " must be an int in [0, " + std::to_string(limit) + "], got ";
    };
    if (PyLong_CheckExact(value.ptr())) {  // the common case: a plain int, no __index__ call
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
        if (overflow == 0 && v >= 0 && v <= limit) return static_cast<std::int64_t>(v);
        if (v == -1 && PyErr_Occurred()) PyErr_Clear();
        throw nb::value_error((allowed() + py_repr(value)).c_str());
    }
    if (PyBool_Check(value.ptr())) {
        throw nb::type_error((allowed() + py_type_name(value) + " " + py_repr(value)).c_str());
    }
    PyObject* index = PyNumber_Index(value.ptr());
    if (index == nullptr) {
        PyErr_Clear();
        throw nb::type_error((allowed() + py_type_name(value) + " " + py_repr(value)).c_str());
    }
    nb::object as_int = nb::steal(index);
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        overflow = 1;
    }
    if (overflow != 0 || v < 0 || v > limit) {
        throw nb::value_error((allowed() + py_repr(as_int)).c_str());
    }
    return static_cast<std::int64_t>(v);
}

template <typename T> const char* dtype_name();
template <> inline const char* dtype_name<std::int8_t>() { return "int8"; }
template <> inline const char* dtype_name<std::uint8_t>() { return "uint8"; }
template <> inline const char* dtype_name<std::int32_t>() { return "int32"; }
template <> inline const char* dtype_name<std::int64_t>() { return "int64"; }
template <> inline const char* dtype_name<std::uint64_t>() { return "uint64"; }
template <> inline const char* dtype_name<float>() { return "float32"; }
template <> inline const char* dtype_name<double>() { return "float64"; }
template <> inline const char* dtype_name<bool>() { return "bool"; }

inline std::string describe_dtype(nb::dlpack::dtype dt) {
    std::string prefix;
    switch (static_cast<nb::dlpack::dtype_code>(dt.code)) {
        case nb::dlpack::dtype_code::Int: prefix = "int"; break;
        case nb::dlpack::dtype_code::UInt: prefix = "uint"; break;
        case nb::dlpack::dtype_code::Float: prefix = "float"; break;
        case nb::dlpack::dtype_code::Bool: return "bool";
        case nb::dlpack::dtype_code::Complex: prefix = "complex"; break;
        default: prefix = "dtype-code-" + std::to_string(dt.code) + "-bits-"; break;
    }
    std::string out = prefix + std::to_string(dt.bits);
    if (dt.lanes != 1) out += "x" + std::to_string(dt.lanes);
    return out;
}

// Expected extents: -1 marks a free extent, shown with its letter from `letters`.
struct Shape {
    std::vector<std::int64_t> dims;
    std::vector<const char*> letters;

    std::string describe() const {
        std::string s = "(";
        for (std::size_t i = 0; i < dims.size(); ++i) {
            if (i) s += ", ";
            s += dims[i] < 0 ? std::string(letters[i]) : std::to_string(dims[i]);
        }
        return s + (dims.size() == 1 ? ",)" : ")");
    }
};

inline std::string describe_shape(const nb::ndarray<nb::ro>& a) {
    std::string s = "(";
    for (std::size_t i = 0; i < a.ndim(); ++i) {
        if (i) s += ", ";
        s += std::to_string(a.shape(i));
    }
    return s + (a.ndim() == 1 ? ",)" : ")");
}

// A checked view of a caller-owned C-contiguous CPU buffer of T with the given shape. It holds
// the buffer's export for its own lifetime; destroy it with the GIL held.
template <typename T> struct Buffer {
    T* data = nullptr;
    std::vector<std::int64_t> shape;
    nb::ndarray<nb::ro> keep_ro;
    nb::ndarray<> keep_rw;

    std::int64_t size() const {
        std::int64_t n = 1;
        for (auto d : shape) n *= d;
        return n;
    }
};

// Check `obj` against dtype T and `expected`; `writable` buffers must accept writes.
// `fn` and `name` name the function and argument in the error message.
template <typename T>
Buffer<T> checked_buffer(nb::handle obj, const char* fn, const char* name, const Shape& expected,
                         bool writable) {
    const std::string want = std::string(fn) + ": " + name + " must be a C-contiguous " +
                             dtype_name<T>() + " array of shape " + expected.describe() +
                             (writable ? " (writable)" : "") + " in CPU memory, got ";
    nb::ndarray<nb::ro> view;
    if (!nb::try_cast(obj, view, /*convert=*/false)) {
        throw nb::value_error((want + "a " + py_type_name(obj) + " object").c_str());
    }
    const std::string got = "a " + describe_dtype(view.dtype()) + " array of shape " +
                            describe_shape(view);
    if (view.dtype() != nb::dtype<T>()) throw nb::value_error((want + got).c_str());
    if (view.device_type() != nb::device::cpu::value) {
        throw nb::value_error((want + got + " on device type " +
                               std::to_string(view.device_type()))
                                  .c_str());
    }
    if (view.ndim() != expected.dims.size()) throw nb::value_error((want + got).c_str());
    Buffer<T> buf;
    buf.shape.resize(view.ndim());
    for (std::size_t i = 0; i < view.ndim(); ++i) {
        const auto extent = static_cast<std::int64_t>(view.shape(i));
        if (expected.dims[i] >= 0 && extent != expected.dims[i]) {
            throw nb::value_error((want + got).c_str());
        }
        buf.shape[i] = extent;
    }
    // C order: the last stride is 1 element, each earlier one the product of later extents
    // (extents of 1, and empty arrays, may have any strides).
    if (buf.size() > 0) {
        std::int64_t accum = 1;
        for (std::size_t i = view.ndim(); i-- > 0;) {
            if (buf.shape[i] != 1 && view.stride(i) != accum) {
                throw nb::value_error((want + got + " that is not C-contiguous").c_str());
            }
            accum *= buf.shape[i];
        }
    }
    if (writable) {
        if (!nb::try_cast(obj, buf.keep_rw, /*convert=*/false)) {
            throw nb::value_error((want + got + " that is read-only").c_str());
        }
        buf.data = static_cast<T*>(buf.keep_rw.data());
    } else {
        buf.data = const_cast<T*>(static_cast<const T*>(view.data()));
        buf.keep_ro = std::move(view);
    }
    return buf;
}

// The buffer-protocol format character of T (NumPy's, for native byte order).
template <typename T> constexpr char buffer_format();
template <> constexpr char buffer_format<float>() { return 'f'; }
template <> constexpr char buffer_format<std::int8_t>() { return 'b'; }
template <> constexpr char buffer_format<std::uint8_t>() { return 'B'; }

// checked_buffer for a hot path: a writable 1-D buffer of exactly n elements of T, C-contiguous
// in CPU memory. It asks the buffer protocol directly (no message built, no ndarray cast: a
// tenth of checked_buffer's cost); whatever that does not accept at once goes through
// checked_buffer, which accepts it or raises its ValueError, so the same buffers are accepted
// and refused with the same messages. Use it with the GIL held, for the span of one call.
template <typename T> class HotBuffer {
  public:
    HotBuffer(nb::handle obj, const char* fn, const char* name, std::int64_t n, const char* letter) {
        if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) == 0) {
            held_ = true;
            const char* f = view_.format;
            // PyBUF_ND without PyBUF_STRIDES: the exporter gives C-contiguous memory or refuses.
            if (view_.ndim == 1 && view_.shape != nullptr && view_.shape[0] == n &&
                view_.itemsize == static_cast<Py_ssize_t>(sizeof(T)) && f != nullptr &&
                f[0] == buffer_format<T>() && f[1] == '\0' && !view_.readonly) {
                data_ = static_cast<T*>(view_.buf);
                return;
            }
            PyBuffer_Release(&view_);
            held_ = false;
        } else {
            PyErr_Clear();
        }
        slow_ = checked_buffer<T>(obj, fn, name, Shape{{n}, {letter}}, true);
        data_ = slow_.data;
    }
    ~HotBuffer() {
        if (held_) PyBuffer_Release(&view_);
    }
    HotBuffer(const HotBuffer&) = delete;
    HotBuffer& operator=(const HotBuffer&) = delete;
    T* data() const { return data_; }

  private:
    Py_buffer view_{};
    bool held_ = false;
    Buffer<T> slow_;
    T* data_ = nullptr;
};

}  // namespace traveller::binding
