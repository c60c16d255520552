#!/usr/bin/env python3
"""Hash oracle: run the official ROS 2 Jazzy rosidl pipeline on an interface package.

Runs ``rosidl_adapter`` (.msg/.srv/.action -> .idl) and then
``rosidl_generator_type_description`` (.idl -> .json with RIHS01 type hashes), the same
generators ``rosidl_generate_interfaces`` runs in a ROS build, from the pinned PyPI wheels
(``ros-rosidl-adapter==4.6.6``, ``ros-rosidl-generator-type-description==4.6.6``; install
with ``.ci/oracles``). Run it with the oracle venv's interpreter::

    target/oracle-venv/bin/python oracle/hash_oracle.py \\
        --package-dir rclev-codegen/interfaces/tf2_msgs --package-name tf2_msgs \\
        --out /tmp/h/tf2_msgs [--include PKG:DIR ...] [--no-default-includes]

Output: ``OUTDIR/{msg,srv,action}/<Name>.idl`` and ``<Name>.json``, the same layout as
``<venv>/share/<pkg>/`` in the wheels, so an OUTDIR can itself serve as an include
directory for a later run. On stdout it prints one ``<type_name> <hash_string>`` line per
type defined by the package (messages, services, actions and their derived types such as
``pkg/srv/X_Event`` or ``pkg/action/X_SendGoal_Request``), sorted by type name.

Include paths. The generator does not read other packages' .msg files; for every nested type
from another package it loads ``<DIR>/msg/<Type>.json`` of that package, taking the type
description and hash from there. ``--include PKG:DIR`` maps package PKG to DIR (the directory
holding its ``msg/``). By default every package under ``<venv>/share`` that has
``msg/*.json`` is included as ``PKG:<venv>/share/PKG`` (builtin_interfaces, std_msgs,
geometry_msgs, service_msgs, unique_identifier_msgs, ...); explicit ``--include`` options
win over the defaults. A package that is not in the venv (example_interfaces, tf2_msgs, or
any user package) is included by pointing at the OUTDIR of an earlier run on it::

    hash_oracle.py --package-dir interfaces/example_interfaces \\
        --package-name example_interfaces --out /tmp/h/example_interfaces
    hash_oracle.py --package-dir my_pkg --package-name my_pkg --out /tmp/h/my_pkg \\
        --include example_interfaces:/tmp/h/example_interfaces

Services always need service_msgs and builtin_interfaces (``_Event`` has
``service_msgs/msg/ServiceEventInfo``); actions also need unique_identifier_msgs (action_msgs
is not referenced). All of these are in the default includes.

JSON layout (one file per .msg/.srv/.action; written with ``json.dumps(indent=2)``, so
non-ASCII is ``\\uXXXX``-escaped)::

    {
      "type_description_msg": {
        "type_description": {"type_name": "pkg/msg/Name", "fields": [FIELD, ...]},
        "referenced_type_descriptions": [ {"type_name": ..., "fields": [...]}, ... ]
      },
      "type_hashes": [ {"type_name": "pkg/msg/Name", "hash_string": "RIHS01_<64 hex>"}, ... ]
    }
    FIELD = {"name": "x",
             "type": {"type_id": N, "capacity": N, "string_capacity": N,
                      "nested_type_name": "pkg/msg/T" or ""},
             "default_value": "<string, '' when there is no default>"}

- ``referenced_type_descriptions``: the transitive closure of nested types, sorted by
  type_name (each with the same ``fields`` shape, defaults included).
- ``type_hashes``: the file's own type first, then one entry per referenced type in the
  same sorted order. A .msg gives 1 + (number of referenced types); a .srv file's type
  ``pkg/srv/X`` has fields request_message, response_message, event_message, so its
  ``type_hashes`` lists pkg/srv/X, builtin_interfaces/msg/Time,
  service_msgs/msg/ServiceEventInfo, pkg/srv/X_Event, X_Request, X_Response (plus their
  references); an action's lists 16 (test_msgs/action/Fibonacci).
- A type with no fields gets one ``structure_needs_at_least_one_member`` (uint8) field.
- The hash itself is computed over the same structure with every ``default_value``
  removed (see the reference, section 4).

``default_value`` strings (``str()`` of the value that rosidl_parser read from the .idl
annotation ``@default(value=...)``), from test_msgs/msg/Defaults.json, Arrays.json,
Strings.json and geometry_msgs/msg/Quaternion.json in the wheels:

- ints (also byte, char): decimal, e.g. ``"-50"``, ``"200"``, ``"50000000"``;
- floats: Python ``str(float)`` of the value as a double (float32 values are not rounded),
  always with a decimal point or an exponent: ``"1.125"``; ``float64 w 1`` (Quaternion)
  gives ``"1.0"``; ``float32 f 1e20`` gives ``"1e+20"``, ``float32 g 0.1`` gives ``"0.1"``;
- bools: ``"True"`` / ``"False"`` (``bool bool_value true`` gives ``"True"``);
- strings: the bare value, quotes removed, escapes resolved: ``"Hello world!"``,
  ``"Hello'world!"``, ``"Hello\\"world!"`` (JSON-escaped), wstrings the same
  (``"Hell\\u00f6 w\\u00f6rld!"`` in the file);
- arrays and sequences (fixed, bounded and unbounded alike): the Python ``repr`` of a tuple
  of the parsed values: ``"(0, 127, -128)"``, ``"(False, True, False)"``,
  ``"(1.125, 0.0, -1.125)"``, ``"(0, 1, 18446744073709551615)"``, ``float64[] h [1, -2.5e-7]``
  gives ``"(1.0, -2.5e-07)"``,
  ``"('', 'max value', 'min value')"`` (a string element holding ``'`` is repr'd with
  double quotes, like Python does);
- no default: ``""``. Constants do not appear in the JSON at all.
"""

import argparse
import contextlib
import json
import pathlib
import sys
import tempfile

from rosidl_adapter import convert_to_idl
from rosidl_generator_type_description import generate_type_hash

KINDS = ('msg', 'srv', 'action')


def default_includes():
    share = pathlib.Path(sys.prefix) / 'share'
    out = {}
    if share.is_dir():
        for d in sorted(share.iterdir()):
            if any((d / k).is_dir() and any((d / k).glob('*.json')) for k in KINDS):
                out[d.name] = d
    return out


def run(package_dir, package_name, out, includes):
    package_dir = package_dir.resolve()
    out = out.resolve()
    sources = [p.relative_to(package_dir)
               for k in KINDS if (package_dir / k).is_dir()
               for p in sorted((package_dir / k).glob('*.' + k))]
    if not sources:
        raise SystemExit(f'no .msg/.srv/.action under {package_dir}')
    # Stale outputs of a previous run would be read back as includes of this package.
    for k in KINDS:
        for p in (out / k).glob('*.json') if (out / k).is_dir() else []:
            p.unlink()
    idl_tuples = []
    # The adapter chats on stdout; keep stdout for our result lines.
    with contextlib.redirect_stdout(sys.stderr):
        for src in sources:
            idl = convert_to_idl(package_dir, package_name, src, out)
            idl_tuples.append(f'{out}:{idl.relative_to(out).as_posix()}')
    incl = {k: v for k, v in includes.items() if k != package_name}
    with tempfile.TemporaryDirectory() as tmp:
        args_file = pathlib.Path(tmp) / 'args.json'
        args_file.write_text(json.dumps({
            'package_name': package_name,
            'output_dir': str(out),
            'idl_tuples': idl_tuples,
            'include_paths': [f'{k}:{v.resolve()}' for k, v in sorted(incl.items())],
        }))
        files = generate_type_hash(str(args_file))
    hashes = {}
    for f in files:
        for h in json.loads(pathlib.Path(f).read_text())['type_hashes']:
            if h['type_name'].split('/')[0] == package_name:
                hashes[h['type_name']] = h['hash_string']
    return hashes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--package-dir', type=pathlib.Path, required=True,
                    help='directory holding msg/, srv/, action/')
    ap.add_argument('--package-name', required=True)
    ap.add_argument('--include', action='append', default=[], metavar='PKG:DIR',
                    help='DIR holds msg/<Type>.json of package PKG (repeatable)')
    ap.add_argument('--no-default-includes', action='store_true',
                    help="don't include the packages under <venv>/share")
    ap.add_argument('--out', type=pathlib.Path, required=True)
    args = ap.parse_args()
    includes = {} if args.no_default_includes else default_includes()
    for spec in args.include:
        pkg, sep, d = spec.partition(':')
        if not sep or not pkg or not d:
            ap.error(f'--include wants PKG:DIR, got {spec!r}')
        includes[pkg] = pathlib.Path(d)
    hashes = run(args.package_dir, args.package_name, args.out, includes)
    for name in sorted(hashes):
        print(name, hashes[name])


if __name__ == '__main__':
    main()
