// SPDX-License-Identifier: MIT
// torchops.cc: msmemscope._torchops, PyTorch's aten operators as operator
// launches: a global RecordFunction callback of libtorch (scope FUNCTION,
// every aten operator the dispatcher runs, on every thread, backward's
// included) that calls msmemscope_op_begin(name) at its start and
// msmemscope_op_end() at its end. Around the outermost operator of a
// thread it pushes the owner tag "aten", so what operators allocate is
// aten's until msmemscope.torch tags it with a role. With accesses on
// (--events with access) it also asks libtorch for each operator's inputs
// and outputs and declares their storages' blocks read at its start and
// written at its end (msmemscope_access), for the inefficient analysis.
// A second callback (scope USER_SCOPE, the record_function()s of Python
// code) watches torch.optim's "Optimizer.step#<class>.step": the end of
// a thread's outermost one is a step the recorder infers
// (msmemscope__optimizer_step), which counts where the program marks no
// steps itself (doc/python.md).
//
// Built only when configure found libtorch's headers (Debian:
// libtorch-dev) and the interpreter's torch, with that torch's C++ ABI
// (_GLIBCXX_USE_CXX11_ABI): it links the libtorch_cpu the interpreter's
// torch loads, so import it after torch. Like _msmemscope, it finds the
// recorder's API with dlsym(RTLD_DEFAULT) and does nothing without it.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

#include <cstring>

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>

namespace {

void (*op_begin)(const char *name);
void (*op_end)(void);
void (*owner_push)(const char *tag);
void (*owner_pop)(void);
void (*access)(const void *ptr, size_t size, int mode);
void (*optimizer_step)(void);
at::CallbackHandle handle = at::INVALID_CALLBACK_HANDLE;
at::CallbackHandle user_handle = at::INVALID_CALLBACK_HANDLE;
thread_local unsigned depth; // aten operators running on this thread
thread_local unsigned optimizer_depth; // optimizer steps running on this thread

// torch.optim's Optimizer.profile_hook_step names its record_function so
// (torch 1.13 to 2.x).
const char optimizer_prefix[] = "Optimizer.step#";

bool is_optimizer_step(const at::RecordFunction &fn)
{
	return !strncmp(fn.name(), optimizer_prefix, sizeof optimizer_prefix - 1);
}

// Runs at every record_function() of Python code: no allocation, no Python.
std::unique_ptr<at::ObserverContext> on_user_start(const at::RecordFunction &fn)
{
	if (is_optimizer_step(fn))
		optimizer_depth++;
	return nullptr;
}

// An optimizer that steps others (ZeroRedundancyOptimizer, a GradScaler's
// step) ends one step: its outermost.
void on_user_end(const at::RecordFunction &fn, at::ObserverContext *)
{
	if (is_optimizer_step(fn) && optimizer_depth && --optimizer_depth == 0)
		optimizer_step();
}

enum { ACCESS_READ = 1, ACCESS_WRITE = 2 }; // enum msmemscope_access_mode

// The whole block of a tensor's storage: its start is the block's, so a
// replay finds it at once.
void access_tensor(const at::Tensor &t, int mode)
{
	if (!t.defined() || !t.has_storage() || !t.device().is_cpu())
		return;
	const c10::Storage &s = t.storage();
	if (s.data() && s.nbytes())
		access(s.data(), s.nbytes(), mode);
}

void access_value(const c10::IValue &v, int mode)
{
	if (v.isTensor()) {
		access_tensor(v.toTensor(), mode);
	} else if (v.isTensorList()) {
		c10::List<at::Tensor> list = v.toTensorList();
		for (size_t i = 0; i < list.size(); i++)
			access_tensor(list.get(i), mode);
	}
}

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

// The same, with the inputs read at the start and the outputs written at
// the end, inside the launch.
std::unique_ptr<at::ObserverContext> on_start_access(const at::RecordFunction &fn)
{
	std::unique_ptr<at::ObserverContext> r = on_start(fn);

	for (const c10::IValue &v : fn.inputs())
		access_value(v, ACCESS_READ);
	return r;
}

void on_end_access(const at::RecordFunction &fn, at::ObserverContext *ctx)
{
	for (const c10::IValue &v : fn.outputs())
		access_value(v, ACCESS_WRITE);
	on_end(fn, ctx);
}

// _report_as_cuda(address, size, allocated, reserved, device): a test
// double of PyTorch's CUDA caching allocator, for machines without a GPU:
// reports a block handed out (size < 0: taken back) to c10's profiler
// hook as libc10_cuda does, from another library than libc10, which the
// recorder takes (hooks/torch.c).
PyObject *py_report_as_cuda(PyObject *, PyObject *args)
{
	unsigned long long addr, allocated, reserved;
	long long size;
	int device;

	if (!PyArg_ParseTuple(args, "KLKKi", &addr, &size, &allocated, &reserved, &device))
		return nullptr;
	c10::reportMemoryUsageToProfiler(reinterpret_cast<void *>(addr), size, allocated, reserved,
					 c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device)));
	Py_RETURN_NONE;
}

// enable(accesses=False): registers the callback once (with accesses,
// the one that declares the operators' inputs and outputs). Returns True
// when operators are recorded from now on, False when the process is not
// recorded.
PyObject *py_enable(PyObject *, PyObject *args)
{
	int (*recording)(void) = reinterpret_cast<int (*)(void)>(dlsym(RTLD_DEFAULT, "msmemscope_recording"));
	int accesses = 0;

	if (!PyArg_ParseTuple(args, "|p", &accesses))
		return nullptr;

	if (handle != at::INVALID_CALLBACK_HANDLE)
		Py_RETURN_TRUE;
	if (!recording || !recording())
		Py_RETURN_FALSE;
	op_begin = reinterpret_cast<void (*)(const char *)>(dlsym(RTLD_DEFAULT, "msmemscope_op_begin"));
	op_end = reinterpret_cast<void (*)(void)>(dlsym(RTLD_DEFAULT, "msmemscope_op_end"));
	owner_push = reinterpret_cast<void (*)(const char *)>(dlsym(RTLD_DEFAULT, "msmemscope_owner_push"));
	owner_pop = reinterpret_cast<void (*)(void)>(dlsym(RTLD_DEFAULT, "msmemscope_owner_pop"));
	access = reinterpret_cast<void (*)(const void *, size_t, int)>(dlsym(RTLD_DEFAULT, "msmemscope_access"));
	// Absent from an older recorder: no steps are inferred then.
	optimizer_step = reinterpret_cast<void (*)(void)>(dlsym(RTLD_DEFAULT, "msmemscope__optimizer_step"));
	if (!op_begin || !op_end || !owner_push || !owner_pop || (accesses && !access))
		Py_RETURN_FALSE;
	try {
		if (accesses)
			handle = at::addGlobalCallback(at::RecordFunctionCallback(on_start_access, on_end_access)
							       .needsInputs(true)
							       .needsOutputs(true)
							       .scopes({ at::RecordScope::FUNCTION }));
		else
			handle = at::addGlobalCallback(
				at::RecordFunctionCallback(on_start, on_end).scopes({ at::RecordScope::FUNCTION }));
		if (optimizer_step)
			user_handle = at::addGlobalCallback(at::RecordFunctionCallback(on_user_start, on_user_end)
								    .scopes({ at::RecordScope::USER_SCOPE }));
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
	if (user_handle != at::INVALID_CALLBACK_HANDLE) {
		at::removeCallback(user_handle);
		user_handle = at::INVALID_CALLBACK_HANDLE;
	}
	Py_RETURN_NONE;
}

PyMethodDef methods[] = {
	{ "enable", py_enable, METH_VARARGS,
	  "enable(accesses=False): records every aten operator as an operator launch (with accesses, its inputs "
	  "read and outputs written); False when not recorded." },
	{ "disable", py_disable, METH_NOARGS, "Stops recording aten operators." },
	{ "_report_as_cuda", py_report_as_cuda, METH_VARARGS,
	  "_report_as_cuda(address, size, allocated, reserved, device): a test double: reports a block as PyTorch's "
	  "CUDA caching allocator does (size < 0: taken back)." },
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
