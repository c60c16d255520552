#!/usr/bin/env python3
"""Write rclev's copies of the standard ROS 2 Jazzy interface definitions.

rclev ships the standard interfaces in ``rclev-codegen/interfaces/<pkg>/{msg,srv,action}/``.
Those files hold only the wire contract: each field and constant (type, name, default or
constant value) in its original order, and the ``---`` separators of services and actions.
Comments, blank lines and documentation prose are dropped, and whitespace is normalised to
``TYPE NAME`` / ``TYPE NAME DEFAULT`` / ``TYPE NAME=VALUE``.

Input: the definition files that the pinned Jazzy wheels install under
``<venv>/share/<pkg>/{msg,srv,action}/`` (run ``.ci/oracles`` first). Run it with the oracle
venv's interpreter, which has ``rosidl_adapter``::

    target/oracle-venv/bin/python rclev-codegen/scripts/vendor_interfaces.py          # write
    target/oracle-venv/bin/python rclev-codegen/scripts/vendor_interfaces.py --check  # CI check

Comment rule (the same as ``rosidl_adapter.parser.parse_message_string``): tabs become
spaces, and the first ``#`` on a line starts a comment, even inside a quoted string value.
So ``string FOO="a # b"`` defines the value ``"a`` and is written back as ``string FOO="a``.
The value text is kept verbatim (after the comment is cut off), so it always parses to the
same value. Every written file is parsed again with ``rosidl_adapter`` and compared with the
parse of the original file: field types, names and default values, and constant types, names
and values must be identical (including the Python type of each value), otherwise the script
fails.

``example_interfaces`` and ``tf2_msgs`` are not on PyPI; they are written by hand and this
script leaves them alone (it only rewrites the packages in ``PACKAGES``).
"""

import argparse
import importlib.metadata
import pathlib
import sys

from rosidl_adapter import parser as rp

# The packages taken from the wheels (ROS package name -> wheel distribution name).
PACKAGES = [
    'builtin_interfaces',
    'std_msgs',
    'std_srvs',
    'geometry_msgs',
    'sensor_msgs',
    'nav_msgs',
    'diagnostic_msgs',
    'visualization_msgs',
    'rosgraph_msgs',
    'rcl_interfaces',
    'action_msgs',
    'unique_identifier_msgs',
    'lifecycle_msgs',
    'type_description_interfaces',
    'service_msgs',
    'rmw_dds_common',
]

KINDS = ('msg', 'srv', 'action')
SEPARATOR = '---'


def dist_name(pkg):
    return 'ros-' + pkg.replace('_', '-')


def contract_line(line):
    """Return the canonical contract text of one definition line, or None if it has none.

    Mirrors parse_message_string: tabs -> spaces, cut at the first '#', strip, then split
    ``TYPE REST``; REST with '=' is a constant ``NAME=VALUE``, else a field ``NAME [DEFAULT]``.
    """
    line = line.replace('\t', ' ').rstrip()
    index = line.find(rp.COMMENT_DELIMITER)
    if index >= 0:
        line = line[:index]
    line = line.rstrip()
    if not line.strip():
        return None
    type_string, _, rest = line.partition(' ')
    rest = rest.lstrip()
    if not type_string or not rest:
        raise ValueError(f'not a field or constant: {line!r}')
    index = rest.find(rp.CONSTANT_SEPARATOR)
    if index == -1:
        name, _, default = rest.partition(' ')
        default = default.lstrip()
        return f'{type_string} {name} {default}' if default else f'{type_string} {name}'
    name, _, value = rest.partition(rp.CONSTANT_SEPARATOR)
    return f'{type_string} {name.rstrip()}={value.lstrip()}'


def contract_text(text, kind):
    """The contract-only body of a .msg/.srv/.action file (no header)."""
    out = []
    for line in text.splitlines():
        # A separator only counts when the line is exactly '---' (rosidl_adapter's rule).
        if kind != 'msg' and line == SEPARATOR:
            out.append(SEPARATOR)
            continue
        c = contract_line(line)
        if c is not None:
            out.append(c)
    return out


def parse(pkg, name, kind, text):
    """Parse with rosidl_adapter; return the list of MessageSpecifications."""
    if kind == 'msg':
        return [rp.parse_message_string(pkg, name, text)]
    if kind == 'srv':
        s = rp.parse_service_string(pkg, name, text)
        return [s.request, s.response]
    a = rp.parse_action_string(pkg, name, text)
    return [a.goal, a.result, a.feedback]


def spec_key(spec):
    """Everything that is part of the contract, with the Python type of each value."""
    def typ(t):
        return (t.pkg_name, t.type, t.string_upper_bound, t.is_array, t.array_size,
                t.is_upper_bound)

    def val(v):
        if isinstance(v, list):
            return [val(x) for x in v]
        return (type(v).__name__, repr(v))

    return (
        str(spec.base_type),
        [(typ(f.type), f.name, val(f.default_value)) for f in spec.fields],
        [(c.type, c.name, val(c.value)) for c in spec.constants],
    )


def vendor_package(share, pkg, version, out_root):
    """Return {relative path: new text} for one package."""
    files = {}
    src_root = share / pkg
    for kind in KINDS:
        d = src_root / kind
        if not d.is_dir():
            continue
        for src in sorted(d.glob('*.' + kind)):
            original = src.read_text(encoding='utf-8')
            body = contract_text(original, kind)
            header = (f'# Generated by rclev-codegen/scripts/vendor_interfaces.py from '
                      f'{dist_name(pkg)}=={version} (Apache-2.0); contract only.')
            text = '\n'.join([header, ''] + body) + '\n'
            name = src.stem
            before = [spec_key(s) for s in parse(pkg, name, kind, original)]
            after = [spec_key(s) for s in parse(pkg, name, kind, text)]
            if before != after:
                raise SystemExit(f'{pkg}/{kind}/{src.name}: contract changed by rewriting:\n'
                                 f'  original: {before}\n  ours:     {after}')
            files[pathlib.Path(pkg) / kind / src.name] = text
    if not files:
        raise SystemExit(f'{pkg}: no interface files under {src_root}')
    return files


def main():
    here = pathlib.Path(__file__).resolve()
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--share', type=pathlib.Path, default=pathlib.Path(sys.prefix) / 'share',
                    help='the venv share dir holding <pkg>/msg/... (default: this '
                         "interpreter's prefix/share)")
    ap.add_argument('--out', type=pathlib.Path, default=here.parent.parent / 'interfaces',
                    help='output root (default: rclev-codegen/interfaces)')
    ap.add_argument('--check', action='store_true',
                    help='write nothing; fail if the output tree differs')
    args = ap.parse_args()

    wanted = {}
    for pkg in PACKAGES:
        version = importlib.metadata.version(dist_name(pkg))
        wanted.update(vendor_package(args.share, pkg, version, args.out))

    existing = set()
    for pkg in PACKAGES:
        for kind in KINDS:
            d = args.out / pkg / kind
            if d.is_dir():
                existing.update(p.relative_to(args.out) for p in d.iterdir() if p.is_file())

    stale = sorted(existing - set(wanted))
    changed = sorted(p for p, t in wanted.items()
                     if not (args.out / p).is_file()
                     or (args.out / p).read_text(encoding='utf-8') != t)
    if args.check:
        for p in stale:
            print(f'stale: {p}')
        for p in changed:
            print(f'out of date: {p}')
        if stale or changed:
            sys.exit(1)
        print(f'{len(wanted)} interface files up to date')
        return
    for p in stale:
        (args.out / p).unlink()
    for p in changed:
        (args.out / p).parent.mkdir(parents=True, exist_ok=True)
        (args.out / p).write_text(wanted[p], encoding='utf-8')
    print(f'{len(wanted)} interface files ({len(changed)} written, {len(stale)} removed) '
          f'under {args.out}')


if __name__ == '__main__':
    main()
