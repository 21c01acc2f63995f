#include "errors.hpp"

#include "config/config.hpp"

namespace py = pybind11;

namespace mqx::python {
namespace {

// Sets the Python error (a translator must not throw). The class is looked
// up when raised: mqx.errors is imported with the package, before any
// binding can throw; RuntimeError stands in should it ever be missing.
void raise(const char* className, const char* message) {
  PyObject* errors = PyImport_ImportModule("mqx.errors");
  PyObject* type = errors != nullptr ? PyObject_GetAttrString(errors, className) : nullptr;
  PyErr_Clear();
  PyErr_SetString(type != nullptr ? type : PyExc_RuntimeError, message);
  Py_XDECREF(type);
  Py_XDECREF(errors);
}

} // namespace

void bindErrors(py::module_& module) {
  py::register_exception_translator([](std::exception_ptr pointer) {
    if (!pointer) return;
    try {
      std::rethrow_exception(pointer);
    } catch (const DaemonNotRunning& error) {
      raise("DaemonNotRunning", error.what());
    } catch (const AdmissionTimeout& error) {
      raise("AdmissionTimeout", error.what());
    } catch (const ConfigError& error) {
      raise("ConfigError", error.what());
    } catch (const MqxError& error) {
      raise("MqxError", error.what());
    }
  });
}

} // namespace mqx::python
