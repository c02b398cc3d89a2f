/*
 * rtstudy._native: the work that operators "do", in C, with the GIL released.
 *
 * Why C: a pure-Python busy loop holds the GIL, so two Python operators doing
 * "5 ms of work" on two threads serialise on the interpreter, not on the CPU.
 * C++ Holoscan operators do not, and the seeds' claims are about those. The
 * study keeps pure-Python work only as an explicit factor (rtstudy.measure.work).
 *
 * Also here: reading a thread's effective scheduling attributes back
 * (sched_getattr), and probing, on a real thread, whether this process may
 * use a real-time policy: that is what the host check reports.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* The kernel's struct sched_attr; glibc 2.36 (Debian 12) does not export it. */
struct rt_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
};

static inline int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static PyObject *busy_until(PyObject *self, PyObject *args)
{
    long long deadline;
    int64_t now;
    (void)self;
    if (!PyArg_ParseTuple(args, "L", &deadline))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    do {
        now = mono_ns();
    } while (now < deadline);
    Py_END_ALLOW_THREADS
    return PyLong_FromLongLong(now);
}

static PyObject *busy_for(PyObject *self, PyObject *args)
{
    long long duration;
    int64_t now, deadline;
    (void)self;
    if (!PyArg_ParseTuple(args, "L", &duration))
        return NULL;
    if (duration < 0) {
        PyErr_Format(PyExc_ValueError, "duration_ns must be >= 0, got %lld", duration);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    deadline = mono_ns() + duration;
    do {
        now = mono_ns();
    } while (now < deadline);
    Py_END_ALLOW_THREADS
    return PyLong_FromLongLong(now);
}

static PyObject *fixed_work(PyObject *self, PyObject *args)
{
    long long iterations;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "L", &iterations))
        return NULL;
    if (iterations < 0) {
        PyErr_Format(PyExc_ValueError, "iterations must be >= 0, got %lld", iterations);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    /* xorshift64: a dependent chain the compiler cannot fold or vectorise, so
     * the same iteration count is the same CPU work on every call. */
    for (long long i = 0; i < iterations; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong(x);
}

static PyObject *cpu_list(const cpu_set_t *set)
{
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, set)) {
            PyObject *v = PyLong_FromLong(cpu);
            if (!v || PyList_Append(list, v) < 0) {
                Py_XDECREF(v);
                Py_DECREF(list);
                return NULL;
            }
            Py_DECREF(v);
        }
    }
    return list;
}

static PyObject *thread_sched(PyObject *self, PyObject *noargs)
{
    struct rt_sched_attr attr;
    cpu_set_t set;
    (void)self;
    (void)noargs;
    memset(&attr, 0, sizeof(attr));
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    PyObject *cpus = cpu_list(&set);
    if (!cpus)
        return NULL;
    return Py_BuildValue("{s:l,s:I,s:I,s:i,s:K,s:K,s:K,s:N}",
                         "tid", (long)syscall(SYS_gettid),
                         "policy", attr.sched_policy,
                         "priority", attr.sched_priority,
                         "nice", attr.sched_nice,
                         "runtime_ns", (unsigned long long)attr.sched_runtime,
                         "deadline_ns", (unsigned long long)attr.sched_deadline,
                         "period_ns", (unsigned long long)attr.sched_period,
                         "cpus", cpus);
}

struct probe_request {
    struct rt_sched_attr attr;
    int cpu;
    int result; /* 0, or the errno of the first call that failed */
};

static void *probe_thread(void *arg)
{
    struct probe_request *req = arg;
    struct rt_sched_attr back;
    req->result = 0;
    if (req->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(req->cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) != 0) {
            req->result = errno;
            return NULL;
        }
    }
    if (syscall(SYS_sched_setattr, 0, &req->attr, 0) != 0) {
        req->result = errno;
        return NULL;
    }
    /* Read the policy back rather than trusting the return code. */
    memset(&back, 0, sizeof(back));
    if (syscall(SYS_sched_getattr, 0, &back, sizeof(back), 0) != 0)
        req->result = errno;
    else if (back.sched_policy != req->attr.sched_policy)
        req->result = EINVAL;
    return NULL;
}

static PyObject *probe_policy(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"policy", "priority", "runtime_ns", "deadline_ns",
                             "period_ns", "cpu", NULL};
    unsigned int policy, priority = 0;
    unsigned long long runtime = 0, deadline = 0, period = 0;
    int cpu = -1, rc;
    pthread_t thread;
    struct probe_request req;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "I|IKKKi", kwlist, &policy, &priority,
                                     &runtime, &deadline, &period, &cpu))
        return NULL;
    memset(&req, 0, sizeof(req));
    req.attr.size = sizeof(req.attr);
    req.attr.sched_policy = policy;
    req.attr.sched_priority = priority;
    req.attr.sched_runtime = runtime;
    req.attr.sched_deadline = deadline;
    req.attr.sched_period = period;
    req.cpu = cpu;
    Py_BEGIN_ALLOW_THREADS
    rc = pthread_create(&thread, NULL, probe_thread, &req);
    if (rc == 0)
        pthread_join(thread, NULL);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyLong_FromLong(req.result);
}

static PyMethodDef methods[] = {
    {"busy_until", busy_until, METH_VARARGS,
     "busy_until(deadline_ns) -> int\n\nSpin, GIL released, until CLOCK_MONOTONIC reaches "
     "deadline_ns; return the CLOCK_MONOTONIC time (ns) at which it stopped."},
    {"busy_for", busy_for, METH_VARARGS,
     "busy_for(duration_ns) -> int\n\nSpin, GIL released, for duration_ns of CLOCK_MONOTONIC "
     "time; return the time (ns) at which it stopped."},
    {"fixed_work", fixed_work, METH_VARARGS,
     "fixed_work(iterations) -> int\n\nRun a fixed amount of CPU work (iterations of a "
     "xorshift64 chain), GIL released; return the checksum."},
    {"thread_sched", thread_sched, METH_NOARGS,
     "thread_sched() -> dict\n\nThe calling thread's effective scheduling attributes: tid, "
     "policy, priority, nice, runtime_ns, deadline_ns, period_ns, cpus (affinity)."},
    {"probe_policy", (PyCFunction)(void (*)(void))probe_policy, METH_VARARGS | METH_KEYWORDS,
     "probe_policy(policy, priority=0, runtime_ns=0, deadline_ns=0, period_ns=0, cpu=-1) -> int\n\n"
     "Start a thread, optionally pin it to cpu, apply the policy with sched_setattr and read it "
     "back. Return 0 on success or the errno that refused it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "Native work (GIL released) and scheduling-policy helpers for rtstudy.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "SCHED_OTHER", SCHED_OTHER) < 0 ||
        PyModule_AddIntConstant(m, "SCHED_FIFO", SCHED_FIFO) < 0 ||
        PyModule_AddIntConstant(m, "SCHED_RR", SCHED_RR) < 0 ||
        PyModule_AddIntConstant(m, "SCHED_DEADLINE", SCHED_DEADLINE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
