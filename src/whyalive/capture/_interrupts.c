/*
 * whyalive.capture._interrupts -- calls that an interrupt cannot cut short of their cleanup.
 *
 * Python code can be interrupted before its first bytecode runs: a pending
 * SIGINT is raised at the entry of the next Python function called, so a
 * `try/finally` written in that function never starts, and a `with lock:` runs
 * a line of its own after its block, before the lock's __exit__. These need a
 * first and last step that is not Python code (docs/architecture.md, GC rules 10):
 *
 *   guard(body, rescue): a method (descriptor) that calls body(*args) and,
 *     when it raises anything, calls rescue(*args) before re-raising. An
 *     __exit__ or stop() whose body was cut at any point still restores what
 *     the matching __enter__ or start() changed.
 *
 *   locked(lock, body, *args): body(*args) with lock held, taken and released
 *     with no bytecode between.
 *
 *   guard(body, rescue, after_collection=True): the same as a gc.callbacks
 *     entry, called with (phase, info). CPython prints and drops what a gc
 *     callback raises; this one keeps it and raises it again in the
 *     interrupted code once the collection has returned (once every callback
 *     has run: from the moment the collector releases the info dict).
 *
 * The pure-Python fallbacks (whyalive.capture.interrupts) do the same except for the
 * first and last steps; they are used only when this module is not compiled.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* ------------------------------------------------------------------ */
/* Keeping an exception                                                */

/* The exception being raised, normalized and with its traceback attached. */
static PyObject *
take_exception(void)
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (type == NULL) {
        return NULL;
    }
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL) {
        PyException_SetTraceback(value, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value; /* new reference, or NULL when normalizing failed */
}

static void
restore_exception(PyObject *value)
{
    PyObject *traceback = PyException_GetTraceback(value); /* new reference */
    PyObject *type = (PyObject *)Py_TYPE(value);
    Py_INCREF(type);
    PyErr_Restore(type, value, traceback); /* steals all three */
}

/* rescue(*args) after body(*args) raised; the body's exception stays current. */
static void
call_rescue(PyObject *rescue, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *raised = take_exception();
    PyObject *result = PyObject_Vectorcall(rescue, args, nargsf, kwnames);
    if (result == NULL) {
        PyErr_WriteUnraisable(rescue);
    }
    Py_XDECREF(result);
    if (raised != NULL) {
        restore_exception(raised);
    }
    else if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_SystemError, "whyalive: an exception was lost while rescuing");
    }
}

/* ------------------------------------------------------------------ */
/* Raising again after a collection                                    */

static int
raise_pending(void *arg)
{
    restore_exception((PyObject *)arg); /* steals the reference */
    return -1;
}

static void
pending_capsule_freed(PyObject *capsule)
{
    PyObject *pending = (PyObject *)PyCapsule_GetPointer(capsule, "whyalive.interrupted");
    if (pending != NULL && Py_AddPendingCall(raise_pending, pending) < 0) {
        Py_DECREF(pending); /* the pending-call queue is full: dropped, as CPython would */
    }
}

/* Raise `pending` once the collection returns. The collector frees `info`
 * after the last callback of the phase has run: a capsule in it then queues
 * the exception, and the interpreter raises it at the next bytecode boundary,
 * in the code that the collection interrupted. */
static void
raise_after_collection(PyObject *pending, PyObject *info)
{
    PyObject *capsule = PyCapsule_New(pending, "whyalive.interrupted", pending_capsule_freed);
    if (capsule != NULL && PyDict_Check(info) &&
        PyDict_SetItemString(info, "whyalive.interrupted", capsule) == 0) {
        Py_DECREF(capsule); /* info holds it now */
        return;
    }
    /* No dict to ride on: queue it now (a later callback of this phase may see it). */
    PyErr_Clear();
    if (capsule != NULL) {
        PyCapsule_SetDestructor(capsule, NULL);
        Py_DECREF(capsule);
    }
    if (Py_AddPendingCall(raise_pending, pending) < 0) {
        Py_DECREF(pending);
    }
}

/* ------------------------------------------------------------------ */
/* guard                                                               */

typedef struct {
    PyObject_HEAD
    PyObject *body;
    PyObject *rescue;
    PyObject *pending; /* after_collection: what body raised, raised again later */
    PyObject *dict;    /* __doc__, __name__, __wrapped__ for introspection */
    int after_collection;
    vectorcallfunc vectorcall;
} Guard;

/* As a gc callback: keep what body raised, to raise it after the collection. */
static void
keep_for_later(Guard *guard)
{
    PyObject *raised = take_exception();
    if (raised != NULL) {
        /* Its traceback holds the callback's frame, which holds info: a cycle
         * that would keep the capsule below from being freed. The exception is
         * raised again where the collection was, which is what the user sees. */
        PyException_SetTraceback(raised, Py_None);
    }
    if (guard->pending == NULL) {
        guard->pending = raised; /* the first one wins; later ones are dropped */
    }
    else {
        Py_XDECREF(raised);
    }
}

/* A gc callback's exception is raised again without its traceback (see keep_for_later);
 * dropped before the rescue runs, the frames it cut free what their locals held: a
 * rescue that reads reference counts (what a collection saved) then reads true ones. */
static void
drop_traceback(void)
{
    PyObject *raised = take_exception();
    if (raised != NULL) {
        PyException_SetTraceback(raised, Py_None);
        restore_exception(raised);
    }
}

static PyObject *
guard_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Guard *guard = (Guard *)self;
    PyObject *result = PyObject_Vectorcall(guard->body, args, nargsf, kwnames);
    if (result == NULL) {
        if (guard->after_collection) {
            drop_traceback();
        }
        call_rescue(guard->rescue, args, nargsf, kwnames);
    }
    if (!guard->after_collection) {
        return result;
    }
    if (result == NULL) {
        keep_for_later(guard);
    }
    Py_XDECREF(result);
    /* Kept at the start phase too, and raised once its collection stops. */
    if (guard->pending != NULL && PyVectorcall_NARGS(nargsf) == 2 && PyUnicode_Check(args[0]) &&
        PyUnicode_CompareWithASCIIString(args[0], "stop") == 0) {
        PyObject *pending = guard->pending;
        guard->pending = NULL;
        raise_after_collection(pending, args[1]);
    }
    Py_RETURN_NONE;
}

static PyObject *
guard_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *body, *rescue;
    int after_collection = 0;
    static char *names[] = {"body", "rescue", "after_collection", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$p:guard", names, &body, &rescue,
                                     &after_collection)) {
        return NULL;
    }
    if (!PyCallable_Check(body) || !PyCallable_Check(rescue)) {
        PyErr_SetString(PyExc_TypeError, "guard(body, rescue) takes two callables");
        return NULL;
    }
    Guard *self = (Guard *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(body);
    Py_INCREF(rescue);
    self->body = body;
    self->rescue = rescue;
    self->after_collection = after_collection;
    self->vectorcall = guard_vectorcall;
    self->dict = PyDict_New();
    if (self->dict == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    static const char *copied[] = {"__doc__", "__name__", "__qualname__", "__module__", NULL};
    for (const char **name = copied; *name != NULL; name++) {
        PyObject *value = PyObject_GetAttrString(body, *name);
        if (value == NULL) {
            PyErr_Clear();
            continue;
        }
        int failed = PyDict_SetItemString(self->dict, *name, value);
        Py_DECREF(value);
        if (failed) {
            Py_DECREF(self);
            return NULL;
        }
    }
    if (PyDict_SetItemString(self->dict, "__wrapped__", body) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
guard_traverse(Guard *self, visitproc visit, void *arg)
{
    Py_VISIT(self->body);
    Py_VISIT(self->rescue);
    Py_VISIT(self->pending);
    Py_VISIT(self->dict);
    return 0;
}

static int
guard_clear(Guard *self)
{
    Py_CLEAR(self->body);
    Py_CLEAR(self->rescue);
    Py_CLEAR(self->pending);
    Py_CLEAR(self->dict);
    return 0;
}

static void
guard_dealloc(Guard *self)
{
    PyObject_GC_UnTrack(self);
    guard_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
guard_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *
guard_repr(Guard *self)
{
    return PyUnicode_FromFormat("<whyalive guard of %R>", self->body);
}

static PyTypeObject Guard_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "whyalive.capture._interrupts.guard",
    .tp_basicsize = sizeof(Guard),
    .tp_dealloc = (destructor)guard_dealloc,
    .tp_vectorcall_offset = offsetof(Guard, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)guard_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "guard(body, rescue, *, after_collection=False): call body; when it raises, "
              "call rescue with the same arguments, then re-raise (after_collection: keep "
              "it and raise it once the collection returns). A method when set on a class.",
    .tp_traverse = (traverseproc)guard_traverse,
    .tp_clear = (inquiry)guard_clear,
    .tp_descr_get = guard_get,
    .tp_dictoffset = offsetof(Guard, dict),
    .tp_new = guard_new,
};

/* ------------------------------------------------------------------ */
/* locked                                                              */

/* locked(lock, body, *args): body(*args) with lock held. No bytecode runs between
 * taking the lock and calling body, nor between body's return (or raise) and the
 * release, so an interrupt at any bytecode leaves the lock as it found it; a
 * `with lock:` runs a line of its own (the with statement's, again) after its
 * block and before `__exit__`, where an interrupt leaves the lock held. */
static PyObject *
locked(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "locked(lock, body, *args)");
        return NULL;
    }
    PyObject *lock = args[0];
    PyObject *taken = PyObject_CallMethod(lock, "acquire", NULL);
    if (taken == NULL) {
        return NULL; /* interrupted while waiting: not taken */
    }
    Py_DECREF(taken);
    PyObject *result = PyObject_Vectorcall(args[1], args + 2, (size_t)(nargs - 2), NULL);
    PyObject *raised = result == NULL ? take_exception() : NULL;
    PyObject *released = PyObject_CallMethod(lock, "release", NULL);
    if (released == NULL) {
        PyErr_WriteUnraisable(lock);
    }
    Py_XDECREF(released);
    if (raised != NULL) {
        restore_exception(raised);
    }
    else if (result == NULL && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_SystemError, "whyalive: an exception was lost while unlocking");
    }
    return result;
}

static PyMethodDef interrupts_methods[] = {
    {"locked", (PyCFunction)(void (*)(void))locked, METH_FASTCALL,
     "locked(lock, body, *args) -> body(*args), called with lock held; the lock is released "
     "whatever body raises, with no bytecode between"},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------------ */

static struct PyModuleDef interrupts_module = {
    PyModuleDef_HEAD_INIT,
    "whyalive.capture._interrupts",
    "Interrupt-safe calls for whyalive.capture.interrupts; use that module, not this one.",
    -1,
    interrupts_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__interrupts(void)
{
    if (PyType_Ready(&Guard_Type) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&interrupts_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&Guard_Type);
    if (PyModule_AddObject(module, "guard", (PyObject *)&Guard_Type) < 0) {
        Py_DECREF(&Guard_Type);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
