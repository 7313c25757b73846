/*
 * normalize._scan: the compiled build's scans of bytes (docs/performance.md, "The
 * compiled build"): the UTF-8 check of each native line, the split of what is read
 * into lines, and the cut of a tap record into its members.  The pure-Python build (and
 * any build without this module) does all three with Python's own methods, with the same
 * results.
 *
 * The UTF-8 check.  Session.feed checks that every native line is UTF-8 before an
 * adapter sees it: the adapters' views skip most of a line's strings, and the line is
 * written out again inside its events.  Python has no check that does not decode:
 * bytes.decode builds a str of the whole line, which costs several times a scan of it
 * for a line with a few non-ASCII characters.  This module scans instead; without it,
 * the line is decoded.  Both give the same answer, and an invalid line's error is always
 * worded by Python's decoder.
 *
 * Well-formed UTF-8 is Table 3-7 of the Unicode Standard: no overlong form, no
 * surrogate (U+D800..U+DFFF), nothing above U+10FFFF.  Python's "utf-8" codec accepts
 * exactly these sequences, and its UnicodeDecodeError.start is where the sequence that
 * fails begins: first_invalid returns that index.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HIGH_BITS 0x8080808080808080ULL

/* The index of the first byte of s[0:n] that does not begin a well-formed sequence, or -1. */
static Py_ssize_t
first_invalid(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        /* ASCII, 32 bytes at a time (memcpy: no unaligned read) */
        while (n - i >= 32) {
            uint64_t a, b, c, d;
            memcpy(&a, s + i, 8);
            memcpy(&b, s + i + 8, 8);
            memcpy(&c, s + i + 16, 8);
            memcpy(&d, s + i + 24, 8);
            if ((a | b | c | d) & HIGH_BITS) {
                break;
            }
            i += 32;
        }
        /* then one byte at a time, up to the non-ASCII byte that stopped the words (it is
           in the next 32 bytes) or the end: not back to the words at each ASCII byte */
        while (i < n && s[i] < 0x80) {
            i++;
        }
        if (i >= n) {
            break;
        }
        unsigned char lead = s[i];
        Py_ssize_t len;
        /* the range of the byte after the lead: narrower where the lead alone would
           allow an overlong form, a surrogate or a code point above U+10FFFF */
        unsigned char lo = 0x80, hi = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) {
            len = 2;
        }
        else if (lead >= 0xE0 && lead <= 0xEF) {
            len = 3;
            if (lead == 0xE0) {
                lo = 0xA0;
            }
            else if (lead == 0xED) {
                hi = 0x9F;
            }
        }
        else if (lead >= 0xF0 && lead <= 0xF4) {
            len = 4;
            if (lead == 0xF0) {
                lo = 0x90;
            }
            else if (lead == 0xF4) {
                hi = 0x8F;
            }
        }
        else {
            return i; /* a continuation byte, 0xC0, 0xC1 or 0xF5..0xFF */
        }
        if (n - i < 2 || s[i + 1] < lo || s[i + 1] > hi) {
            return i;
        }
        for (Py_ssize_t k = 2; k < len; k++) {
            if (n - i <= k || (s[i + k] & 0xC0) != 0x80) {
                return i;
            }
        }
        i += len;
    }
    return -1;
}

static PyObject *
scan_first_invalid(PyObject *module, PyObject *data)
{
    (void)module;
    if (!PyBytes_Check(data)) {
        PyErr_Format(PyExc_TypeError, "first_invalid() takes bytes, not %.200s", Py_TYPE(data)->tp_name);
        return NULL;
    }
    return PyLong_FromSsize_t(
        first_invalid((const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)));
}

/* data.split(b"\n"), each newline found by memchr.  bytes.split compares every byte
   with the separator in a loop of its own, io.BytesIO.readlines finds newlines by memchr
   but keeps them (each line is copied once more to drop it): this copies each line once. */
static PyObject *
scan_split_lines(PyObject *module, PyObject *data)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const char *s = (const char *)view.buf;
    Py_ssize_t n = view.len, start = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    for (;;) {
        const char *nl = memchr(s + start, '\n', (size_t)(n - start));
        Py_ssize_t end = nl == NULL ? n : nl - s;
        PyObject *line = PyBytes_FromStringAndSize(s + start, end - start);
        if (line == NULL || PyList_Append(out, line) < 0) {
            Py_XDECREF(line);
            Py_DECREF(out);
            PyBuffer_Release(&view);
            return NULL;
        }
        Py_DECREF(line);
        if (nl == NULL) {
            break;
        }
        start = end + 1;
    }
    PyBuffer_Release(&view);
    return out;
}

/* A tap record written exactly as normalize writes one (normalize._pipeline.tap_record,
   whose rules these are): {"t":"<time>","from":"agent"|"client","msg":<message>}, cut
   apart where its members begin and end.  (time, direction, message), or None for any
   other line, and for a time of any character but printable ASCII (0x20..0x7E, no quote,
   no backslash): those are left to tap_record's own reading, which says the same of
   every line this takes. */
static PyObject *agent_str, *client_str;

static PyObject *
scan_tap_split(PyObject *module, PyObject *data)
{
    (void)module;
    if (!PyBytes_Check(data)) {
        PyErr_Format(PyExc_TypeError, "tap_split() takes bytes, not %.200s", Py_TYPE(data)->tp_name);
        return NULL;
    }
    static const char head[] = "{\"t\":\"";
    static const char agent[] = "\",\"from\":\"agent\",\"msg\":";
    static const char client[] = "\",\"from\":\"client\",\"msg\":";
    const char *s = PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (n < 31 || s[n - 1] != '}' || memcmp(s, head, 6) != 0) {
        Py_RETURN_NONE;
    }
    Py_ssize_t end;
    if (s[30] == '"') {
        end = 30; /* the time of 24 characters normalize writes */
    }
    else {
        const char *q = memchr(s + 6, '"', (size_t)(n - 6));
        if (q == NULL) {
            Py_RETURN_NONE;
        }
        end = q - s;
    }
    if (end <= 6) {
        Py_RETURN_NONE;
    }
    Py_ssize_t start;
    PyObject *from;
    if (n - end >= (Py_ssize_t)(sizeof agent - 1) && memcmp(s + end, agent, sizeof agent - 1) == 0) {
        start = end + (Py_ssize_t)(sizeof agent - 1);
        from = agent_str;
    }
    else if (n - end >= (Py_ssize_t)(sizeof client - 1) && memcmp(s + end, client, sizeof client - 1) == 0) {
        start = end + (Py_ssize_t)(sizeof client - 1);
        from = client_str;
    }
    else {
        Py_RETURN_NONE;
    }
    if (start >= n - 1) {
        Py_RETURN_NONE;
    }
    for (Py_ssize_t i = 6; i < end; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') {
            Py_RETURN_NONE;
        }
    }
    PyObject *t = PyUnicode_FromStringAndSize(s + 6, end - 6);
    if (t == NULL) {
        return NULL;
    }
    PyObject *msg = PyBytes_FromStringAndSize(s + start, n - 1 - start);
    if (msg == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    Py_INCREF(from);
    PyObject *out = PyTuple_New(3);
    if (out == NULL) {
        Py_DECREF(t);
        Py_DECREF(msg);
        Py_DECREF(from);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, t);
    PyTuple_SET_ITEM(out, 1, from);
    PyTuple_SET_ITEM(out, 2, msg);
    return out;
}

static PyMethodDef scan_methods[] = {
    {"first_invalid", scan_first_invalid, METH_O,
     "first_invalid(data, /)\n--\n\n"
     "Where the first sequence of data that is not well-formed UTF-8 begins (the start of\n"
     "the UnicodeDecodeError data.decode('utf-8') raises), or -1 when data is UTF-8."},
    {"split_lines", scan_split_lines, METH_O,
     "split_lines(data, /)\n--\n\n"
     "data.split(b'\\n'): the lines of data, and what follows its last newline (b'' when\n"
     "data ends with one).  data is bytes or any other buffer."},
    {"tap_split", scan_tap_split, METH_O,
     "tap_split(line, /)\n--\n\n"
     "(time, direction, message) of a tap record written exactly as normalize writes one,\n"
     "its time printable ASCII; None for any other line."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT,
    "normalize._scan",
    "The compiled build's scans of bytes (src/normalize/_scan.c).",
    0,
    scan_methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    /* the two directions, interned once: each record shares them, as a decode's would */
    agent_str = PyUnicode_InternFromString("agent");
    client_str = PyUnicode_InternFromString("client");
    if (agent_str == NULL || client_str == NULL) {
        return NULL;
    }
    return PyModuleDef_Init(&scan_module);
}
