"""Eval cases for 3xx (exceptions, tracebacks, frames). `# CODE: line, col` (col 0-based)."""
import inspect
import sys
import traceback


class Worker:
    def run(self, errors, fut):
        try:
            work()
        except ValueError as err:
            self.error = err  # WAL301: 12, 12
        except KeyError as err:
            last = err  # WAL301: 14, 12
            raise last
        except TypeError as err:
            errors.append(err)  # WAL301: 17, 12
        except OSError as err:
            errors.append((1, err))  # WAL301: 19, 12
        except RuntimeError as err:
            fut.set_exception(err)  # WAL301: 21, 12
        except ArithmeticError as err:
            self.error = err.with_traceback(None)
            self.message = str(err)
            log(err)
            raise RuntimeError("wrapped") from err
        except LookupError as err:
            err = None
        except Exception as err:
            kept = err
            del kept
        except BaseException as err:
            return err


def at_module_scope_is_fine():
    pass


try:
    work()
except Exception as err:
    saved = err


def exc_info_kept():
    try:
        work()
    except Exception:
        info = sys.exc_info()  # WAL302: 50, 8
        exc_type = sys.exc_info()[0]
        tb = sys.exc_info()[2]  # WAL302: 52, 8
        text = traceback.format_exc()
    return info, exc_type, tb, text


def traceback_walked():
    try:
        work()
    except Exception as exc:
        tb = exc.__traceback__
        while tb is not None:
            tb = tb.tb_next


def traceback_kept():
    try:
        work()
    except Exception as exc:
        tb = exc.__traceback__  # WAL302: 70, 8
    return tb


def exc_info_elsewhere():
    info = sys.exc_info()
    return info


def frames():
    frame = inspect.currentframe()  # WAL303: 80, 4
    here = sys._getframe()  # WAL303: 81, 4
    caller = sys._getframe(1)
    stack = inspect.stack()  # WAL303: 83, 4
    return frame, here, caller, stack


def frame_cleaned():
    frame = inspect.currentframe()
    try:
        return frame.f_code.co_name
    finally:
        del frame


def frame_walked():
    frame = inspect.currentframe()
    while frame is not None:
        frame = frame.f_back


def cause_chain_walked():
    try:
        work()
    except Exception as e:
        cur = e
        while cur.__cause__ is not None:
            cur = cur.__cause__
        return str(cur)
