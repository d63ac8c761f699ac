/*
 * whyalive.kinds._dense -- the facts of a batch of plain strided tensors, read in one call.
 *
 * The monitor describes every step's tensors at each analysis; in Python, the loop
 * around torch's accessors costs twice what the accessors do. This module runs the
 * loop of whyalive.kinds.torch_dense.DenseReader.read_many with the same accessors,
 * handed over by the reader (it never imports torch), and makes the same
 * HeavyFacts, or None as it does: another layout, a nested, fake or meta tensor, or
 * one that raised an Exception (describe_any reads those). Without this module the
 * reader's Python loop runs.
 *
 *   read_dense(objects, spec) -> [HeavyFacts | None, ...]
 *
 *   spec: (plain_known, is_plain, layout_of, nested_of, strided, device_of, dtype_of,
 *          shape_of, storage_of, use_count, words, make_words, facts_type, template, kind)
 *     plain_known: {id(cls): (cls, answer)}, the table of the memo is_plain(cls)
 *     words: {(cls, device, dtype, shape): (description, device words) | None}, filled
 *       by make_words(cls, device, dtype, shape) for a key not in it
 *     template: the fields of an owning HeavyFacts, in order, copied per tensor
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum {
    PLAIN_KNOWN,
    IS_PLAIN,
    LAYOUT_OF,
    NESTED_OF,
    STRIDED,
    DEVICE_OF,
    DTYPE_OF,
    SHAPE_OF,
    STORAGE_OF,
    USE_COUNT,
    WORDS,
    MAKE_WORDS,
    FACTS_TYPE,
    TEMPLATE,
    KIND,
    SPEC_SIZE
};

static PyObject *s_cdata, *s_nbytes, *s_data_ptr, *s_torch, *s_kind, *s_description,
    *s_device, *s_storage, *s_storage_users, *s_memory, *s_dict_name;

/* Whether cls is plain, as the reader's memo says (asked, and so remembered, when
 * its table lacks cls); -1 with an error. */
static int
plain_class(PyObject *cls, PyObject *const *spec)
{
    PyObject *cls_id = PyLong_FromVoidPtr((void *)cls);
    if (cls_id == NULL) {
        return -1;
    }
    PyObject *plain = PyDict_GetItemWithError(spec[PLAIN_KNOWN], cls_id);
    Py_DECREF(cls_id);
    if (plain != NULL && PyTuple_CheckExact(plain) && PyTuple_GET_SIZE(plain) == 2 &&
        PyTuple_GET_ITEM(plain, 0) == cls) {
        return PyTuple_GET_ITEM(plain, 1) == Py_True;
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    PyObject *said = PyObject_CallOneArg(spec[IS_PLAIN], cls);
    int answer = said == NULL ? -1 : PyObject_IsTrue(said);
    Py_XDECREF(said);
    return answer;
}

/* The words of (cls, device, dtype, shape), made and remembered when new: a new
 * reference, NULL with an error. A metaclass __hash__ may run meanwhile: the words
 * made are used as made, never looked up again. */
static PyObject *
words_of(PyObject *key, PyObject *const *spec)
{
    PyObject *words = PyDict_GetItemWithError(spec[WORDS], key);
    if (words != NULL) {
        return Py_NewRef(words);
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    words = PyObject_Call(spec[MAKE_WORDS], key, NULL);
    if (words != NULL && PyDict_SetItem(spec[WORDS], key, words) < 0) {
        Py_CLEAR(words);
    }
    return words;
}

/* One tensor's facts; NULL with an error, or Py_None (a new reference) for "not a
 * plain strided tensor" (describe_any reads it). The class is read once, as the
 * Python loop reads it: a metaclass __hash__ may reassign obj.__class__ meanwhile. */
static PyObject *
read_one(PyObject *obj, PyObject *const *spec)
{
    PyObject *cls = Py_NewRef((PyObject *)Py_TYPE(obj));
    PyObject *device = NULL, *dtype = NULL, *shape = NULL, *key = NULL, *words = NULL;
    PyObject *storage = NULL, *cdata = NULL, *nbytes = NULL, *start = NULL, *users = NULL;
    PyObject *memory = NULL, *storage_key = NULL, *sharer_count = NULL, *fields = NULL;
    PyObject *made = NULL, *result = NULL;
    int is_plain = plain_class(cls, spec);
    if (is_plain <= 0) {
        result = is_plain < 0 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    PyObject *layout = PyObject_CallOneArg(spec[LAYOUT_OF], obj);
    if (layout == NULL) {
        goto done;
    }
    int strided = layout == spec[STRIDED];
    Py_DECREF(layout);
    if (!strided) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *nested = PyObject_CallOneArg(spec[NESTED_OF], obj);
    int is_nested = nested == NULL ? -1 : PyObject_IsTrue(nested);
    Py_XDECREF(nested);
    if (is_nested != 0) {
        result = is_nested < 0 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    device = PyObject_CallOneArg(spec[DEVICE_OF], obj);
    dtype = device ? PyObject_CallOneArg(spec[DTYPE_OF], obj) : NULL;
    shape = dtype ? PyObject_CallOneArg(spec[SHAPE_OF], obj) : NULL;
    key = shape ? PyTuple_Pack(4, cls, device, dtype, shape) : NULL;
    words = key ? words_of(key, spec) : NULL;
    if (words == NULL) {
        goto done;
    }
    if (!PyTuple_CheckExact(words) || PyTuple_GET_SIZE(words) != 2) {
        result = Py_NewRef(Py_None); /* the meta device: no memory */
        goto done;
    }
    PyObject *description = PyTuple_GET_ITEM(words, 0);
    PyObject *device_words = PyTuple_GET_ITEM(words, 1);
    storage = PyObject_CallOneArg(spec[STORAGE_OF], obj);
    cdata = storage ? PyObject_GetAttr(storage, s_cdata) : NULL;
    nbytes = cdata ? PyObject_CallMethodNoArgs(storage, s_nbytes) : NULL;
    start = nbytes ? PyObject_CallMethodNoArgs(storage, s_data_ptr) : NULL;
    if (start == NULL) {
        goto done;
    }
    if (!PyLong_CheckExact(cdata) || !PyLong_CheckExact(nbytes) || !PyLong_CheckExact(start)) {
        result = Py_NewRef(Py_None); /* not torch's own storage: describe_any reads it */
        goto done;
    }
    long long sharers = 0;
    if (spec[USE_COUNT] != Py_None) {
        users = PyObject_CallOneArg(spec[USE_COUNT], cdata);
        if (users == NULL) {
            goto done;
        }
        if (!PyLong_CheckExact(users)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        sharers = PyLong_AsLongLong(users);
        if (sharers == -1 && PyErr_Occurred()) {
            goto done;
        }
        sharers -= 1; /* one count is the temporary storage object we hold */
    }
    Py_CLEAR(storage);
    int has_start = PyObject_IsTrue(start);
    if (has_start < 0) {
        goto done;
    }
    if (has_start) {
        PyObject *end = PyNumber_Add(start, nbytes);
        memory = end ? PyTuple_Pack(2, start, end) : NULL;
        Py_XDECREF(end);
    } else {
        memory = Py_NewRef(Py_None);
    }
    storage_key = PyTuple_Pack(3, s_torch, device_words, cdata);
    sharer_count = PyLong_FromLongLong(sharers);
    fields = PyDict_Copy(spec[TEMPLATE]);
    if (memory == NULL || storage_key == NULL || sharer_count == NULL || fields == NULL ||
        PyDict_SetItem(fields, s_kind, spec[KIND]) < 0 ||
        PyDict_SetItem(fields, s_description, description) < 0 ||
        PyDict_SetItem(fields, s_nbytes, nbytes) < 0 ||
        PyDict_SetItem(fields, s_device, device_words) < 0 ||
        PyDict_SetItem(fields, s_storage, storage_key) < 0 ||
        PyDict_SetItem(fields, s_storage_users, sharer_count) < 0 ||
        PyDict_SetItem(fields, s_memory, memory) < 0) {
        goto done;
    }
    PyTypeObject *facts_type = (PyTypeObject *)spec[FACTS_TYPE];
    made = facts_type->tp_alloc(facts_type, 0);
    /* object.__setattr__(made, "__dict__", fields), as HeavyFacts.owning does. */
    if (made == NULL || PyObject_GenericSetAttr(made, s_dict_name, fields) < 0) {
        goto done;
    }
    result = made;
    made = NULL;
done:
    Py_DECREF(cls);
    Py_XDECREF(device);
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    Py_XDECREF(key);
    Py_XDECREF(words);
    Py_XDECREF(storage);
    Py_XDECREF(cdata);
    Py_XDECREF(nbytes);
    Py_XDECREF(start);
    Py_XDECREF(users);
    Py_XDECREF(memory);
    Py_XDECREF(storage_key);
    Py_XDECREF(sharer_count);
    Py_XDECREF(fields);
    Py_XDECREF(made);
    return result;
}

static PyObject *
read_dense(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2 || !PyTuple_CheckExact(args[1]) || PyTuple_GET_SIZE(args[1]) != SPEC_SIZE) {
        PyErr_SetString(PyExc_TypeError, "read_dense(objects, spec) needs a spec of 15 items");
        return NULL;
    }
    PyObject *const *spec = &PyTuple_GET_ITEM(args[1], 0);
    if (!PyDict_CheckExact(spec[PLAIN_KNOWN]) || !PyDict_CheckExact(spec[WORDS]) ||
        !PyDict_CheckExact(spec[TEMPLATE]) || !PyType_Check(spec[FACTS_TYPE]) ||
        !PyType_HasFeature((PyTypeObject *)spec[FACTS_TYPE], Py_TPFLAGS_HEAPTYPE)) {
        PyErr_SetString(PyExc_TypeError,
                        "read_dense: plain_known, words and template must be dicts, facts_type "
                        "a class");
        return NULL;
    }
    PyObject *items = PySequence_List(args[0]);
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(items);
    PyObject *found = PyList_New(count);
    for (Py_ssize_t i = 0; found != NULL && i < count; i++) {
        PyObject *facts = read_one(PyList_GET_ITEM(items, i), spec);
        if (facts == NULL) {
            if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) {
                Py_CLEAR(found); /* an interrupt goes through */
                break;
            }
            PyErr_Clear(); /* a hostile or half-dead tensor: describe_any reads it */
            facts = Py_NewRef(Py_None);
        }
        PyList_SET_ITEM(found, i, facts);
    }
    Py_DECREF(items);
    return found;
}

static PyMethodDef methods[] = {
    {"read_dense", (PyCFunction)(void (*)(void))read_dense, METH_FASTCALL,
     "read_dense(objects, spec) -> [HeavyFacts | None, ...]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "whyalive.kinds._dense",
    .m_doc = "The facts of a batch of plain strided tensors, read in one call; use "
             "whyalive.kinds.torch_dense, not this module.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__dense(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {
        {&s_cdata, "_cdata"},     {&s_nbytes, "nbytes"},   {&s_data_ptr, "data_ptr"},
        {&s_torch, "torch"},      {&s_kind, "kind"},       {&s_description, "description"},
        {&s_device, "device"},    {&s_storage, "storage"}, {&s_storage_users, "storage_users"},
        {&s_memory, "memory"},    {&s_dict_name, "__dict__"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].slot == NULL) {
            *names[i].slot = PyUnicode_InternFromString(names[i].text);
            if (*names[i].slot == NULL) {
                return NULL;
            }
        }
    }
    return PyModule_Create(&module);
}
