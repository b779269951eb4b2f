// SPDX-License-Identifier: MIT
// torchops.cc: msmemscope._torchops, PyTorch's aten operators as operator
// launches: a global RecordFunction callback of libtorch (scope FUNCTION,
// every aten operator the dispatcher runs, on every thread, backward's
// included) that calls msmemscope_op_begin(name) at its start and
// msmemscope_op_end() at its end. Around the outermost operator of a
// thread it pushes the owner tag "aten", so what operators allocate is
// aten's until msmemscope.torch tags it with a role.
//
// Built only when configure found libtorch's headers (Debian:
// libtorch-dev) and the interpreter's torch, with that torch's C++ ABI
// (_GLIBCXX_USE_CXX11_ABI): it links the libtorch_cpu the interpreter's
// torch loads, so import it after torch. Like _msmemscope, it finds the
// recorder's API with dlsym(RTLD_DEFAULT) and does nothing without it.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

#include <ATen/record_function.h>

namespace {

void (*op_begin)(const char *name);
void (*op_end)(void);
void (*owner_push)(const char *tag);
void (*owner_pop)(void);
at::CallbackHandle handle = at::INVALID_CALLBACK_HANDLE;
thread_local unsigned depth; // aten operators running on this thread

// Runs inside every aten operator: no allocation, no Python.
std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn)
{
	op_begin(fn.name());
	if (depth++ == 0)
		owner_push("aten");
	return nullptr;
}

void on_end(const at::RecordFunction &, at::ObserverContext *)
{
	if (depth && --depth == 0)
		owner_pop();
	op_end();
}

// enable(): registers the callback once. Returns True when operators are
// recorded from now on, False when the process is not recorded.
PyObject *py_enable(PyObject *, PyObject *)
{
	int (*recording)(void) = reinterpret_cast<int (*)(void)>(dlsym(RTLD_DEFAULT, "msmemscope_recording"));

	if (handle != at::INVALID_CALLBACK_HANDLE)
		Py_RETURN_TRUE;
	if (!recording || !recording())
		Py_RETURN_FALSE;
	op_begin = reinterpret_cast<void (*)(const char *)>(dlsym(RTLD_DEFAULT, "msmemscope_op_begin"));
	op_end = reinterpret_cast<void (*)(void)>(dlsym(RTLD_DEFAULT, "msmemscope_op_end"));
	owner_push = reinterpret_cast<void (*)(const char *)>(dlsym(RTLD_DEFAULT, "msmemscope_owner_push"));
	owner_pop = reinterpret_cast<void (*)(void)>(dlsym(RTLD_DEFAULT, "msmemscope_owner_pop"));
	if (!op_begin || !op_end || !owner_push || !owner_pop)
		Py_RETURN_FALSE;
	try {
		handle = at::addGlobalCallback(
			at::RecordFunctionCallback(on_start, on_end).scopes({ at::RecordScope::FUNCTION }));
	} catch (const std::exception &e) {
		return PyErr_Format(PyExc_RuntimeError, "msmemscope: libtorch refused the RecordFunction callback: %s",
				    e.what());
	}
	Py_RETURN_TRUE;
}

// disable(): removes the callback; operators already begun still end.
PyObject *py_disable(PyObject *, PyObject *)
{
	if (handle != at::INVALID_CALLBACK_HANDLE) {
		at::removeCallback(handle);
		handle = at::INVALID_CALLBACK_HANDLE;
	}
	Py_RETURN_NONE;
}

PyMethodDef methods[] = {
	{ "enable", py_enable, METH_NOARGS, "Records every aten operator as an operator launch; False when not recorded." },
	{ "disable", py_disable, METH_NOARGS, "Stops recording aten operators." },
	{ nullptr, nullptr, 0, nullptr },
};

PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_torchops", "aten operators as msmemscope operator launches (RecordFunction).", -1,
	methods, nullptr, nullptr, nullptr, nullptr,
};

} // namespace

extern "C" __attribute__((visibility("default"))) PyObject *PyInit__torchops(void);

PyObject *PyInit__torchops(void)
{
	return PyModule_Create(&module);
}
