"""python -m mtrain_export MODULE.py:FACTORY --example NAME=DTYPE:DIMS ... --wrap-module-types CLASS -o DIR"""
import argparse
import sys


def _torch_problem():
    """Why this interpreter cannot export (None when it can): torch.export and AOTInductor are
    PyTorch 2.x's, and the worker loads only packages of its own PyTorch release."""
    try:
        import torch
    except ImportError as e:
        return f"the Python {sys.executable} cannot import torch ({e})"
    if int(torch.__version__.split(".")[0]) < 2 or not hasattr(torch, "export"):
        return (f"the Python {sys.executable} has PyTorch {torch.__version__}, which has no torch.export "
                "and AOTInductor (PyTorch 2.x)")
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="mtrain export",
        description="Export a PyTorch model with torch.export and compile it with AOTInductor into "
                    "a package mtrain trains (model.name=compiled).",
        epilog="mtrain export --python PATH runs this with another interpreter (default: MTRAIN_PYTHON, else "
               "the Python whose PyTorch built mtrain's worker: a package loads only in that PyTorch release).")
    ap.add_argument("factory", help="MODULE.py:FUNCTION returning the nn.Module (your own code: it runs)")
    ap.add_argument("--example", action="append", required=True, metavar="NAME=DTYPE:DIMS",
                    help="one per loss input in order, e.g. input=int64:6x8 target=int64:6x8")
    ap.add_argument("--wrap-module-types", required=True,
                    help="comma-separated class names of the units (as fsdp.wrap_module_types), e.g. Block")
    ap.add_argument("-o", "--out", required=True, help="the package directory to write")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (the worker's device)")
    a = ap.parse_args(argv)
    problem = _torch_problem()
    if problem:
        print(f"mtrain export: error: {problem}. Export with the Python whose PyTorch built this mtrain's "
              "worker (its packages load only there): `mtrain export --python PATH …` or MTRAIN_PYTHON=PATH; "
              "scripts/python-env prints a checkout's.", file=sys.stderr)
        return 2
    from .package import export
    from .trace import ExportError
    try:
        report = export(a.factory, a.example, [t for t in a.wrap_module_types.split(",") if t],
                        a.out, a.device)
    except ExportError as e:
        print(f"mtrain export: error: {e}", file=sys.stderr)
        return 2
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
