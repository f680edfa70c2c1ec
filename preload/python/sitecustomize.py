"""vramtrace's Python bootstrap (docs/user/PYTORCH.md).

`vramtrace run` puts this directory first on PYTHONPATH, so Python imports
this file at start-up as `sitecustomize` (unless -S, -I or -E). It

1. installs an import hook that waits for the program to import `torch`
   (it never imports torch itself; a program that does not is not touched
   again), then hands over to _vramtrace_torch.py;
2. takes its own directory off sys.path again;
3. runs the `sitecustomize` that Python would have run without us - the
   next one on sys.path (the user's, their virtualenv's, Debian's) - as
   `sitecustomize`, so both run and the user's errors stay theirs.

Anything of ours that fails is one line on stderr; never an exception,
output or exit status of the program's.
"""


def _vramtrace_bootstrap():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))

    def say(msg):
        try:
            sys.stderr.write("vramtrace: python bootstrap: %s\n" % msg)
            sys.stderr.flush()
        except Exception:
            pass

    def ours(entry):
        try:
            return os.path.abspath(entry or os.curdir) == here
        except Exception:
            return False

    class VramtraceTorchImportHook(object):
        """A sys.meta_path finder for `torch` alone: asked for it, it leaves
        sys.meta_path, finds the spec the finders after it give, wraps that
        spec's loader instance's exec_module (the instance, not its class:
        torch.__loader__ stays what it is), so that once torch is imported
        _vramtrace_torch.py runs, and answers with that very spec."""

        busy = False

        def find_spec(self, name, path=None, target=None):
            if name != "torch" or self.busy:
                return None
            self.busy = True
            try:
                self.leave()
                try:
                    spec = self.real_spec(name, path, target)
                except Exception:
                    return None  # the import machinery asks them again itself
                if spec is not None:
                    self.wrap(spec)
                return spec
            finally:
                self.busy = False

        def leave(self):
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass

        @staticmethod
        def real_spec(name, path, target):
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    return spec
            return None

        @staticmethod
        def wrap(spec):
            loader = spec.loader
            real = getattr(loader, "exec_module", None)
            if real is None:
                return

            def exec_module(module):
                try:
                    del loader.exec_module
                except Exception:
                    pass
                real(module)
                torch_imported(module)

            try:
                loader.exec_module = exec_module
            except Exception:
                say("cannot watch the import of torch (%s); no OOM snapshots or phases"
                    % type(loader).__name__)

    def torch_imported(torch):
        try:
            import importlib.util

            spec = importlib.util.spec_from_file_location(
                "_vramtrace_torch", os.path.join(here, "_vramtrace_torch.py"))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mod.install(torch, say)
        except Exception as e:
            say("torch support not installed: %s: %s" % (type(e).__name__, e))

    if os.environ.get("VRAMTRACE_TORCH", "1") != "0":
        try:
            if "torch" in sys.modules:
                torch_imported(sys.modules["torch"])
            else:
                sys.meta_path.insert(0, VramtraceTorchImportHook())
        except Exception as e:
            say("import hook not installed: %s: %s" % (type(e).__name__, e))

    # Our directory leaves sys.path: the program sees its own path, in order;
    # and the path finder's cache forgets it (the import of this file put
    # it there).
    sys.path[:] = [p for p in sys.path if not ours(p)]
    for entry in [k for k in sys.path_importer_cache if isinstance(k, str) and ours(k)]:
        sys.path_importer_cache.pop(entry, None)

    # The sitecustomize Python would have imported without us, found by the
    # import system's own path finder: importlib.machinery would be a
    # module in sys.modules the program did not import.
    try:
        from _frozen_importlib_external import PathFinder
    except ImportError:  # not CPython
        from importlib.machinery import PathFinder
    try:
        spec = PathFinder.find_spec("sitecustomize", sys.path)
    except Exception:
        spec = None
    if spec is None or spec.loader is None:
        return None
    return spec


def _vramtrace_chain(spec):
    import sys
    try:
        from _frozen_importlib import module_from_spec  # importlib.util's, loaded at start
    except ImportError:  # not CPython
        from importlib.util import module_from_spec

    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        # As site.py would see it had ours not been first: its error, its
        # message ("Error in sitecustomize; ..."), and no half module left.
        if sys.modules.get("sitecustomize") is module:
            del sys.modules["sitecustomize"]
        raise


_vramtrace_next = None
try:
    _vramtrace_next = _vramtrace_bootstrap()
except Exception as _vramtrace_e:  # pragma: no cover - a bug of ours
    try:
        import sys as _vramtrace_sys

        _vramtrace_sys.stderr.write("vramtrace: python bootstrap: %s: %s\n"
                                    % (type(_vramtrace_e).__name__, _vramtrace_e))
        del _vramtrace_sys
    except Exception:
        pass
try:
    if _vramtrace_next is not None:
        _vramtrace_chain(_vramtrace_next)
finally:
    # Nothing of ours in the module the program may find as `sitecustomize`
    # (ours when there is no other): the import hook keeps what it needs.
    del _vramtrace_bootstrap, _vramtrace_chain, _vramtrace_next
