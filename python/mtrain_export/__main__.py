"""python -m mtrain_export MODULE.py:FACTORY --example NAME=DTYPE:DIMS ... --wrap-module-types CLASS -o DIR"""
import argparse
import sys

from .package import export
from .trace import ExportError


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="mtrain export",
        description="Export a PyTorch model with torch.export and compile it with AOTInductor into "
                    "a package mtrain trains (model.name=compiled).")
    ap.add_argument("factory", help="MODULE.py:FUNCTION returning the nn.Module (your own code: it runs)")
    ap.add_argument("--example", action="append", required=True, metavar="NAME=DTYPE:DIMS",
                    help="one per loss input in order, e.g. input=int64:6x8 target=int64:6x8")
    ap.add_argument("--wrap-module-types", required=True,
                    help="comma-separated class names of the units (as fsdp.wrap_module_types), e.g. Block")
    ap.add_argument("-o", "--out", required=True, help="the package directory to write")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (the worker's device)")
    a = ap.parse_args(argv)
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
