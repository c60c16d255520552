#!/usr/bin/env python3
"""CDR oracle for rclev: real rclpy (Fast CDR typesupport) plus rosbags (byte-exact CDR).

Run with the oracle venv's interpreter (``.ci/oracles`` prints its path)::

    PY=target/oracle-venv/bin/python
    $PY oracle/cdr_oracle.py types                       # the corpus, one type per line
    $PY oracle/cdr_oracle.py generate --out DIR --seed S [--cases-per-type K]
    $PY oracle/cdr_oracle.py verify --dir DIR --seed S
    $PY oracle/cdr_oracle.py selftest [--seed S] [--cases-per-type K]

``generate`` writes ``DIR/cases.jsonl``, one JSON object per line::

    {"type": "test_msgs/msg/BasicTypes", "case": 0,
     "rclpy": "<hex of rclpy.serialization.serialize_message(value)>",
     "exact": "<hex of rosbags serialize_cdr little-endian, or null>",
     "exact_be": "<hex of rosbags serialize_cdr big-endian, or null>"}

All buffers include the 4-byte encapsulation header (``00 01 00 00`` LE, ``00 00 00 00`` BE).
The rclpy buffer is what Fast CDR writes: its padding bytes are not zeroed and it can carry
trailing junk (rclpy returns an estimated-size buffer), so compare it by decoding. rosbags
pads with zeros and writes no trailing bytes; ``exact``/``exact_be`` are ``null`` for types
that contain ``wstring`` (rosbags has no wstring).

Case 0 of every type is the default-constructed value (``Type()``); cases 1..K are random
values made from the seed alone (``random.Random(f"{seed}/{type}/{case}")``), generated from
the rclpy class introspection (``SLOT_TYPES``): fixed array sizes, sequence bounds and string
bounds (counted in UTF-8 bytes for string, in UTF-16 units for wstring) are respected. The
values cover min/max/0/-1 integers, float32-exact floats including +-0, +-inf, subnormals
and extremes (never NaN, so values compare exactly), empty, short and long sequences (up to
3000 elements for primitive types), empty, ASCII, non-ASCII UTF-8 and long strings (never a
NUL), and BMP and non-BMP (surrogate pair) characters in wstrings.

``verify`` reads ``DIR/rclev.jsonl`` with lines ``{"type": ..., "case": ..., "rclev":
"<hex>"}`` (written by the Rust side after decoding the ``rclpy`` bytes with rclev and
encoding them again), regenerates each value from the seed, decodes the rclev bytes with
``rclpy.serialization.deserialize_message`` and compares field by field (floats by bit
pattern; arrays elementwise). It also checks that the ``rclpy`` bytes in cases.jsonl decode
to the regenerated value (which catches a wrong ``--seed``). It prints one line per mismatch
(``MISMATCH <type> case <n> <field path>: ...``) and ``verified N cases``, and exits 0 only
if every case in cases.jsonl has an rclev line and all of them match.

``selftest`` needs no Rust: it generates into a temporary directory, writes a fake
rclev.jsonl from the ``exact`` bytes (the rclpy bytes where ``exact`` is null), runs verify
on it, decodes ``exact_be`` with rclpy too, and compares rclpy's bytes with rosbags' bytes
with the padding masked out (the padding positions come from our own CDR layout walk).

No ``rclpy.init()`` is called and no DDS participant is created.
"""

import argparse
import array
import importlib
import json
import math
import pathlib
import random
import struct
import sys
import tempfile

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from rosbags.interfaces import Nodetype
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosidl_parser import definition as d
from rosidl_pycommon import convert_camel_case_to_lower_case_underscore as snake

# ---------------------------------------------------------------------------------------
# The corpus: every type the oracle covers, in one place.

_TEST_MSGS = ['Arrays', 'BasicTypes', 'BoundedPlainSequences', 'BoundedSequences', 'Builtins',
              'Constants', 'Defaults', 'Empty', 'MultiNested', 'Nested', 'Strings',
              'UnboundedSequences', 'WStrings']
_TEST_SRVS = ['Arrays', 'BasicTypes', 'Empty']
_ACTION_PARTS = ['Goal', 'Result', 'Feedback', 'SendGoal_Request', 'SendGoal_Response',
                 'GetResult_Request', 'GetResult_Response', 'FeedbackMessage']

CORPUS = (
    [f'test_msgs/msg/{n}' for n in _TEST_MSGS]
    + [f'test_msgs/srv/{n}_{p}' for n in _TEST_SRVS for p in ('Request', 'Response')]
    + [f'test_msgs/action/Fibonacci_{p}' for p in _ACTION_PARTS]
    + [
        'std_msgs/msg/Header', 'std_msgs/msg/String', 'std_msgs/msg/Empty',
        'std_msgs/msg/Float64MultiArray',
        'builtin_interfaces/msg/Time',
        'sensor_msgs/msg/Image', 'sensor_msgs/msg/PointCloud2', 'sensor_msgs/msg/JointState',
        'sensor_msgs/msg/Imu', 'sensor_msgs/msg/LaserScan',
        'geometry_msgs/msg/PoseWithCovarianceStamped', 'geometry_msgs/msg/TransformStamped',
        'geometry_msgs/msg/Twist',
        'nav_msgs/msg/Path', 'nav_msgs/msg/Odometry',
        'visualization_msgs/msg/Marker', 'visualization_msgs/msg/MarkerArray',
        'rcl_interfaces/msg/ParameterEvent', 'rcl_interfaces/msg/Log',
        'diagnostic_msgs/msg/DiagnosticArray',
        'action_msgs/msg/GoalStatusArray', 'action_msgs/srv/CancelGoal_Response',
        'rmw_dds_common/msg/ParticipantEntitiesInfo',
        'service_msgs/msg/ServiceEventInfo',
        'unique_identifier_msgs/msg/UUID',
    ]
)

SHARE = pathlib.Path(sys.prefix) / 'share'

# ---------------------------------------------------------------------------------------
# rclpy classes and introspection.


def rclpy_class(type_name):
    """'pkg/kind/Name' -> the rclpy message class (srv/action parts included)."""
    pkg, kind, name = type_name.split('/')
    mod = importlib.import_module(f'{pkg}.{kind}')
    if hasattr(mod, name):
        return getattr(mod, name)
    base = name.split('_')[0]
    return getattr(importlib.import_module(f'{pkg}.{kind}._{snake(base)}'), name)


def nested_name(t):
    return '/'.join(list(t.namespaces) + [t.name])


def fields(cls):
    """[(name, rosidl type)] in declaration order."""
    return list(zip(cls.get_fields_and_field_types().keys(), cls.SLOT_TYPES))


def contains_wstring(t):
    if isinstance(t, d.AbstractWString):
        return True
    if isinstance(t, d.AbstractNestedType):
        return contains_wstring(t.value_type)
    if isinstance(t, d.NamespacedType):
        return any(contains_wstring(ft) for _, ft in fields(rclpy_class(nested_name(t))))
    return False


INT_RANGES = {
    'int8': (-2**7, 2**7 - 1), 'uint8': (0, 2**8 - 1), 'char': (0, 2**8 - 1),
    'int16': (-2**15, 2**15 - 1), 'uint16': (0, 2**16 - 1),
    'int32': (-2**31, 2**31 - 1), 'uint32': (0, 2**32 - 1),
    'int64': (-2**63, 2**63 - 1), 'uint64': (0, 2**64 - 1),
    'octet': (0, 255),
}
NP_DTYPE = {
    'boolean': np.bool_, 'octet': np.uint8, 'char': np.uint8, 'uint8': np.uint8,
    'int8': np.int8, 'int16': np.int16, 'uint16': np.uint16, 'int32': np.int32,
    'uint32': np.uint32, 'int64': np.int64, 'uint64': np.uint64,
    'float': np.float32, 'double': np.float64,
}

# ---------------------------------------------------------------------------------------
# Deterministic random values.

_NON_ASCII = ['é', 'ß', 'ü', 'Ω', 'ж', '€', '中', '文', 'ハ', '\u00a0', '\u200b', '😀', '🚀',
              '𝄞', '\U0010fffd']
_PRINTABLE = [chr(c) for c in range(0x20, 0x7f)] + ['\t', '\n']


def utf16_units(s):
    return len(s.encode('utf-16-le')) // 2


class Gen:
    def __init__(self, rng):
        self.r = rng

    def int_(self, lo, hi):
        r = self.r.random()
        if r < 0.12:
            return lo
        if r < 0.24:
            return hi
        if r < 0.32:
            return 0
        if r < 0.40 and lo < 0:
            return -1
        if r < 0.55:
            return max(lo, min(hi, self.r.randint(-100, 100)))
        return self.r.randint(lo, hi)

    def float_(self, single):
        fmt = '<f' if single else '<d'
        specials = [0.0, -0.0, 1.0, -1.5, math.inf, -math.inf]
        if single:
            specials += [3.4028234663852886e38, -3.4028234663852886e38,
                         1.1754943508222875e-38, 1.401298464324817e-45, -1.401298464324817e-45]
        else:
            specials += [1.7976931348623157e308, -1.7976931348623157e308,
                         2.2250738585072014e-308, 5e-324, -5e-324]
        r = self.r.random()
        if r < 0.2:
            return self.r.choice(specials)
        if r < 0.6:
            v = self.r.uniform(-1e6, 1e6)
        else:
            while True:  # any bit pattern but NaN
                bits = self.r.getrandbits(32 if single else 64)
                v = struct.unpack(fmt, bits.to_bytes(4 if single else 8, 'little'))[0]
                if not math.isnan(v):
                    break
        return struct.unpack(fmt, struct.pack(fmt, v))[0]

    def text(self, wide):
        r = self.r.random()
        if r < 0.15:
            return ''
        if r < 0.45:
            n = self.r.randint(1, 40)
            return ''.join(self.r.choice(_PRINTABLE) for _ in range(n))
        if r < 0.85:
            n = self.r.randint(1, 30)
            return ''.join(self.r.choice(_NON_ASCII if self.r.random() < 0.5 else _PRINTABLE)
                           for _ in range(n))
        n = self.r.randint(200, 3000)
        return ''.join(self.r.choice(_PRINTABLE + _NON_ASCII) for _ in range(n))

    def string(self, t):
        wide = isinstance(t, d.AbstractWString)
        s = self.text(wide)
        bound = getattr(t, 'maximum_size', None)
        if bound is not None:
            size = utf16_units if wide else (lambda x: len(x.encode('utf-8')))
            while size(s) > bound:
                s = s[:-1]
        return s

    def length(self, t, nested):
        bound = t.maximum_size if isinstance(t, d.BoundedSequence) else None
        r = self.r.random()
        if r < 0.2:
            n = 0
        elif r < 0.35:
            n = 1
        elif r < 0.85 or nested:
            n = self.r.randint(2, 8 if nested else 20)
        else:
            n = self.r.randint(100, 3000)
        if bound is not None:
            n = bound if self.r.random() < 0.3 else min(n, bound)
        return n

    def scalar(self, t):
        """A value of a non-array rosidl type, in the form rclpy's setter takes."""
        if isinstance(t, d.BasicType):
            tn = t.typename
            if tn == 'boolean':
                return self.r.random() < 0.5
            if tn == 'octet':
                return bytes([self.int_(0, 255)])
            if tn in ('float', 'double'):
                return self.float_(tn == 'float')
            return self.int_(*INT_RANGES[tn])
        if isinstance(t, d.AbstractGenericString):
            return self.string(t)
        if isinstance(t, d.NamespacedType):
            return self.message(rclpy_class(nested_name(t)))
        raise TypeError(f'unsupported type {t}')

    def value(self, t):
        if isinstance(t, d.AbstractNestedType):
            vt = t.value_type
            n = t.size if isinstance(t, d.Array) else self.length(
                t, not isinstance(vt, d.BasicType))
            items = [self.scalar(vt) for _ in range(n)]
            # bool and byte stay Python lists: rclpy accepts a numpy bool array (or np.True_
            # elements) for bool[N] but serializes every element as False.
            if isinstance(vt, d.BasicType) and vt.typename not in ('octet', 'boolean'):
                if isinstance(t, d.Array):
                    return np.array(items, dtype=NP_DTYPE[vt.typename])
                return array.array(np.dtype(NP_DTYPE[vt.typename]).char, items)
            return items
        return self.scalar(t)

    def message(self, cls):
        msg = cls()
        for name, t in fields(cls):
            setattr(msg, name, self.value(t))
        return msg


def make_value(type_name, seed, case):
    cls = rclpy_class(type_name)
    if case == 0:
        return cls()
    return Gen(random.Random(f'{seed}/{type_name}/{case}')).message(cls)

# ---------------------------------------------------------------------------------------
# Normalised values and comparison.


def f_bits(v, single):
    """Floats compare by bit pattern (so -0.0 != 0.0); the repr is for the reader."""
    bits = struct.pack('<f' if single else '<d', v).hex()
    return f'{v!r}/' + ('f32:' if single else 'f64:') + bits


def norm(value, t):
    """A plain, exactly comparable tree of a rclpy value of rosidl type t."""
    if isinstance(t, d.AbstractNestedType):
        vt = t.value_type
        if isinstance(vt, d.BasicType) and vt.typename == 'octet':
            return [b if isinstance(b, int) else b[0] for b in value]
        return [norm(x, vt) for x in value]
    if isinstance(t, d.BasicType):
        tn = t.typename
        if tn == 'boolean':
            return bool(value)
        if tn == 'octet':
            return value if isinstance(value, int) else value[0]
        if tn in ('float', 'double'):
            return f_bits(float(value), tn == 'float')
        return int(value)
    if isinstance(t, d.AbstractGenericString):
        return str(value)
    if isinstance(t, d.NamespacedType):
        return norm_msg(value)
    raise TypeError(t)


def norm_msg(msg):
    return {name: norm(getattr(msg, name), t) for name, t in fields(type(msg))}


def diff(a, b, path=''):
    """Yield (path, expected, got) for every difference."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            yield from diff(a[k], b.get(k), f'{path}.{k}' if path else k)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield (f'{path}.len', len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            yield from diff(x, y, f'{path}[{i}]')
    elif a != b or type(a) is not type(b):
        yield (path, a, b)


def short(v):
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + '...'

# ---------------------------------------------------------------------------------------
# rosbags: type registration and value conversion.


def _sections(path):
    lines = path.read_text(encoding='utf-8').splitlines()
    out, cur = [], []
    for line in lines:
        if line == '---':
            out.append('\n'.join(cur))
            cur = []
        else:
            cur.append(line)
    out.append('\n'.join(cur))
    return out


def msg_types(text, name):
    """get_types_from_msg for pkg/{msg,srv,action}/Name, fixed up for two rosbags quirks.

    rosbags turns 'pkg/srv/X' into 'pkg/srv/msg/X' and resolves unqualified nested types
    against 'pkg/srv/msg/', so parse under 'pkg/msg/X' (rosidl resolves unqualified names
    to pkg/msg/) and rename. rosbags also leaves a struct with no fields empty, while ROS 2
    gives it one uint8 'structure_needs_at_least_one_member' (one byte on the wire).
    """
    pkg, _kind, n = name.split('/')
    tmp = f'{pkg}/msg/{n}'
    types = get_types_from_msg(text, tmp)
    consts, flds = types.pop(tmp)
    if not flds:
        flds = [('structure_needs_at_least_one_member', (Nodetype.BASE, ('uint8', 0)))]
    types[name] = (consts, flds)
    return types


def make_typestore():
    ts = get_typestore(Stores.ROS2_JAZZY)
    types = {}
    for n in _TEST_MSGS:
        text = (SHARE / 'test_msgs' / 'msg' / f'{n}.msg').read_text(encoding='utf-8')
        types.update(msg_types(text, f'test_msgs/msg/{n}'))
    for n in _TEST_SRVS:
        req, resp = _sections(SHARE / 'test_msgs' / 'srv' / f'{n}.srv')
        types.update(msg_types(req, f'test_msgs/srv/{n}_Request'))
        types.update(msg_types(resp, f'test_msgs/srv/{n}_Response'))
    a = 'test_msgs/action/Fibonacci'
    goal, result, feedback = _sections(SHARE / 'test_msgs' / 'action' / 'Fibonacci.action')
    derived = {  # the implicit action types, as rosidl_parser.definition.Action defines them
        'Goal': goal, 'Result': result, 'Feedback': feedback,
        'SendGoal_Request': f'unique_identifier_msgs/UUID goal_id\n{a}_Goal goal',
        'SendGoal_Response': 'bool accepted\nbuiltin_interfaces/Time stamp',
        'GetResult_Request': 'unique_identifier_msgs/UUID goal_id',
        'GetResult_Response': f'int8 status\n{a}_Result result',
        'FeedbackMessage': f'unique_identifier_msgs/UUID goal_id\n{a}_Feedback feedback',
    }
    for part, text in derived.items():
        types.update(msg_types(text, f'{a}_{part}'))
    # action_msgs/srv/CancelGoal is not in rosbags' store either.
    _req, resp = _sections(SHARE / 'action_msgs' / 'srv' / 'CancelGoal.srv')
    types.update(msg_types(resp, 'action_msgs/srv/CancelGoal_Response'))
    ts.register(types)
    return ts


def to_rosbags(ts, msg, type_name):
    cls = ts.types[type_name]
    fdefs = ts.fielddefs[type_name][1]
    flds = fields(type(msg))
    if not flds:
        assert [f[0] for f in fdefs] == ['structure_needs_at_least_one_member'], type_name
        return cls(structure_needs_at_least_one_member=0)
    assert [f[0] for f in fdefs] == [n for n, _ in flds], (type_name, fdefs, flds)
    kw = {}
    for name, t in flds:
        kw[name] = rb_value(ts, getattr(msg, name), t)
    return cls(**kw)


def rb_value(ts, v, t):
    if isinstance(t, d.AbstractNestedType):
        vt = t.value_type
        if isinstance(vt, d.BasicType):
            if vt.typename == 'octet':
                v = [b if isinstance(b, int) else b[0] for b in v]
            return np.array(list(v), dtype=NP_DTYPE[vt.typename])
        return [rb_value(ts, x, vt) for x in v]
    if isinstance(t, d.BasicType):
        if t.typename == 'octet':
            # rosbags packs a scalar `byte` as signed int8 (ROS 1 heritage); ROS 2 byte is
            # an octet 0..255. Same wire byte either way.
            return v[0] - 256 if v[0] > 127 else v[0]
        if t.typename in ('float', 'double'):
            return float(v)
        if t.typename == 'boolean':
            return bool(v)
        return int(v)
    if isinstance(t, d.AbstractGenericString):
        return v
    if isinstance(t, d.NamespacedType):
        return to_rosbags(ts, v, nested_name(t))
    raise TypeError(t)

# ---------------------------------------------------------------------------------------
# CDR layout walk (for masking padding when comparing rclpy and rosbags bytes).

_SIZE = {'boolean': 1, 'octet': 1, 'char': 1, 'uint8': 1, 'int8': 1, 'int16': 2, 'uint16': 2,
         'int32': 4, 'uint32': 4, 'int64': 8, 'uint64': 8, 'float': 4, 'double': 8}


class Layout:
    """Body offsets (after the 4-byte header) of padding bytes, Fast DDS XCDR1 rules."""

    def __init__(self):
        self.pos = 0
        self.pad = set()

    def align(self, n):
        while self.pos % n:
            self.pad.add(self.pos)
            self.pos += 1

    def prim(self, size, count=1):
        if count:
            self.align(size)
            self.pos += size * count

    def walk(self, v, t):
        if isinstance(t, d.AbstractNestedType):
            vt = t.value_type
            n = len(v)
            if not isinstance(t, d.Array):
                self.prim(4)
            if isinstance(vt, d.BasicType):
                self.prim(_SIZE[vt.typename], n)
            else:
                for x in v:
                    self.walk(x, vt)
        elif isinstance(t, d.BasicType):
            self.prim(_SIZE[t.typename])
        elif isinstance(t, d.AbstractWString):
            self.prim(4)
            self.pos += 4 * utf16_units(v)
        elif isinstance(t, d.AbstractString):
            self.prim(4)
            self.pos += len(v.encode('utf-8')) + 1
        elif isinstance(t, d.NamespacedType):
            self.walk_msg(v)
        else:
            raise TypeError(t)

    def walk_msg(self, msg):
        flds = fields(type(msg))
        if not flds:
            self.prim(1)
        for name, t in flds:
            self.walk(getattr(msg, name), t)

# ---------------------------------------------------------------------------------------
# Commands.


def generate(out, seed, k):
    ts = make_typestore()
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(out / 'cases.jsonl', 'w', encoding='utf-8') as f:
        for type_name in CORPUS:
            cls = rclpy_class(type_name)
            wide = any(contains_wstring(t) for _, t in fields(cls))
            for case in range(k + 1):
                msg = make_value(type_name, seed, case)
                rec = {'type': type_name, 'case': case,
                       'rclpy': serialize_message(msg).hex(), 'exact': None, 'exact_be': None}
                if not wide:
                    rb = to_rosbags(ts, msg, type_name)
                    rec['exact'] = ts.serialize_cdr(rb, type_name, little_endian=True).hex()
                    rec['exact_be'] = ts.serialize_cdr(rb, type_name, little_endian=False).hex()
                f.write(json.dumps(rec) + '\n')
                n += 1
    print(f'wrote {n} cases of {len(CORPUS)} types to {out / "cases.jsonl"}')


def read_jsonl(path):
    with open(path, encoding='utf-8') as f:
        return [json.loads(line) for line in f if line.strip()]


def check(type_name, case, expected, buf, label, report):
    """Decode buf with rclpy and compare with expected; report mismatches; True if equal."""
    cls = rclpy_class(type_name)
    try:
        got = norm_msg(deserialize_message(bytes.fromhex(buf), cls))
    except Exception as e:  # noqa: BLE001 - any decode failure is a mismatch
        report(f'MISMATCH {type_name} case {case} {label}: rclpy cannot decode: {e}')
        return False
    diffs = list(diff(expected, got))
    for path, a, b in diffs[:20]:
        report(f'MISMATCH {type_name} case {case} {label} {path or "<root>"}: '
               f'expected {short(a)} got {short(b)}')
    if len(diffs) > 20:
        report(f'MISMATCH {type_name} case {case} {label}: {len(diffs) - 20} more differences')
    return not diffs


def verify(dirpath, seed, report=print):
    cases = read_jsonl(dirpath / 'cases.jsonl')
    rclev = {}
    ok = True
    for rec in read_jsonl(dirpath / 'rclev.jsonl'):
        key = (rec['type'], rec['case'])
        if key in rclev:
            report(f'DUPLICATE rclev line for {key[0]} case {key[1]}')
            ok = False
        rclev[key] = rec['rclev']
    known = {(c['type'], c['case']) for c in cases}
    for key in sorted(set(rclev) - known):
        report(f'UNKNOWN rclev line for {key[0]} case {key[1]} (not in cases.jsonl)')
        ok = False
    n = 0
    for c in cases:
        key = (c['type'], c['case'])
        expected = norm_msg(make_value(c['type'], seed, c['case']))
        if not check(c['type'], c['case'], expected, c['rclpy'],
                     'cases.jsonl rclpy (wrong --seed?)', report):
            ok = False
            continue
        if key not in rclev:
            report(f'MISSING rclev line for {key[0]} case {key[1]}')
            ok = False
            continue
        if check(c['type'], c['case'], expected, rclev[key], 'rclev', report):
            n += 1
        else:
            ok = False
    print(f'verified {n} cases' + ('' if ok else f' ({len(cases) - n} failed)'))
    return ok


def selftest(seed, k):
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        generate(tmp, seed, k)
        cases = read_jsonl(tmp / 'cases.jsonl')
        with open(tmp / 'rclev.jsonl', 'w', encoding='utf-8') as f:
            for c in cases:
                f.write(json.dumps({'type': c['type'], 'case': c['case'],
                                    'rclev': c['exact'] or c['rclpy']}) + '\n')
        print('-- verify with rosbags LE bytes standing in for rclev')
        ok &= verify(tmp, seed)
        print('-- rosbags big-endian bytes decoded by rclpy')
        n_be = 0
        for c in cases:
            if c['exact_be'] is not None:
                expected = norm_msg(make_value(c['type'], seed, c['case']))
                ok &= check(c['type'], c['case'], expected, c['exact_be'], 'rosbags BE', print)
                n_be += 1
        print(f'checked {n_be} big-endian cases')
        print('-- rclpy bytes vs rosbags bytes, padding masked')
        n_cmp = bad = 0
        for c in cases:
            if c['exact'] is None:
                continue
            msg = make_value(c['type'], seed, c['case'])
            lay = Layout()
            lay.walk_msg(msg)
            exact = bytes.fromhex(c['exact'])
            ours = bytes.fromhex(c['rclpy'])
            problems = []
            if len(exact) != 4 + lay.pos:
                problems.append(f'rosbags length {len(exact)} != layout {4 + lay.pos}')
            if len(ours) < len(exact):
                problems.append(f'rclpy buffer shorter ({len(ours)}) than rosbags ({len(exact)})')
            if not problems:
                diffpos = [i for i in range(len(exact))
                           if exact[i] != ours[i] and (i < 4 or (i - 4) not in lay.pad)]
                if diffpos:
                    problems.append(f'{len(diffpos)} non-padding bytes differ, '
                                    f'first at {diffpos[0]}')
                if any(exact[4 + p] for p in lay.pad):
                    problems.append('rosbags padding not zero')
            if problems:
                bad += 1
                print(f'BYTES {c["type"]} case {c["case"]}: ' + '; '.join(problems))
            n_cmp += 1
        print(f'compared {n_cmp} cases byte for byte (padding masked), {bad} differ')
        ok &= bad == 0
        print('-- rclpy bytes decoded by rosbags, re-encoded by rosbags')
        ts = make_typestore()
        n_rb = bad = trailing = 0
        for c in cases:
            if c['exact'] is None:
                continue
            # rosbags rejects trailing bytes ("CDR message size mismatch") and rclpy's
            # buffers can carry trailing junk, so cut at the exact length.
            buf = bytes.fromhex(c['rclpy'])
            trailing += len(buf) > len(c['exact']) // 2
            try:
                obj = ts.deserialize_cdr(buf[:len(c['exact']) // 2], c['type'])
                again = ts.serialize_cdr(obj, c['type'], little_endian=True).hex()
            except Exception as e:  # noqa: BLE001
                again = f'error: {e}'
            if again != c['exact']:
                bad += 1
                print(f'ROSBAGS {c["type"]} case {c["case"]}: rosbags decodes rclpy bytes '
                      f'differently ({short(again)})')
            n_rb += 1
        print(f'decoded {n_rb} rclpy buffers with rosbags, {bad} differ '
              f'({trailing} rclpy buffers had trailing bytes, cut off)')
        ok &= bad == 0
    print('selftest ' + ('passed' if ok else 'FAILED'))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    sub.add_parser('types', help='print the corpus, one type name per line')
    g = sub.add_parser('generate')
    g.add_argument('--out', type=pathlib.Path, required=True)
    g.add_argument('--seed', required=True)
    g.add_argument('--cases-per-type', type=int, default=4)
    v = sub.add_parser('verify')
    v.add_argument('--dir', type=pathlib.Path, required=True)
    v.add_argument('--seed', required=True)
    s = sub.add_parser('selftest')
    s.add_argument('--seed', default='1')
    s.add_argument('--cases-per-type', type=int, default=4)
    args = ap.parse_args()
    if args.cmd == 'types':
        print('\n'.join(CORPUS))
    elif args.cmd == 'generate':
        generate(args.out, args.seed, args.cases_per_type)
    elif args.cmd == 'verify':
        sys.exit(0 if verify(args.dir, args.seed) else 1)
    else:
        sys.exit(0 if selftest(args.seed, args.cases_per_type) else 1)


if __name__ == '__main__':
    main()
