//! rclev-codegen against the real rosidl toolchain (ROS 2 Jazzy, from the PyPI wheels in the
//! oracle venv that `.ci/oracles` installs), on definitions that have no official JSON:
//!
//! 1. the shipped packages with no wheel (example_interfaces, tf2_msgs);
//! 2. the edge-case fixture package `tests/fixtures/edge_msgs`;
//! 3. a table of small definitions, valid and not, where rclev must accept exactly what
//!    rosidl accepts (and read it the same way), apart from the deliberate differences listed
//!    in [`DELIBERATE`];
//! 4. located errors through [`rclev_codegen::Builder`].
//!
//! "rosidl accepts" means the whole pipeline a ROS 2 build runs succeeds: `rosidl_adapter`
//! (.msg → .idl), `rosidl_parser` and `rosidl_generator_type_description` (.idl → .json), run
//! by `oracle/hash_oracle.py` and `tests/fixtures/rosidl_parse.py`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rclev_codegen::describe::default_text;
use rclev_codegen::{bundled_packages, load_package_dir, parse_package, Package, TypeSet};
mod common;
use common::{field_summary, json_files, official_field_summary, python};
use serde_json::{json, Value};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh, empty scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("oracle_rosidl")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `oracle/hash_oracle.py` on a package directory; the JSON files land in `out`.
fn run_hash_oracle(package_dir: &Path, package: &str, out: &Path) {
    let output = Command::new(python())
        .arg(manifest_dir().join("../oracle/hash_oracle.py"))
        .arg("--package-dir")
        .arg(package_dir)
        .arg("--package-name")
        .arg(package)
        .arg("--out")
        .arg(out)
        .output()
        .expect("run the oracle venv's python");
    assert!(
        output.status.success(),
        "hash_oracle.py failed on {}:\n{}",
        package_dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Compares every hash and every description (fields with defaults) in one generated JSON
/// with `set`. Returns the type names whose hashes were compared; mismatches go to `failures`.
fn compare_json(set: &TypeSet, json: &Value, failures: &mut Vec<String>) -> Vec<String> {
    let mut compared = Vec::new();
    for h in json["type_hashes"].as_array().unwrap() {
        let type_name = h["type_name"].as_str().unwrap();
        let Some(m) = set.get(type_name) else {
            failures.push(format!("{type_name}: rclev has no such type"));
            continue;
        };
        let ours = set.hash_string(&m.name).unwrap();
        if ours != h["hash_string"].as_str().unwrap() {
            failures.push(format!(
                "{type_name}: hash ours {ours}, rosidl {}",
                h["hash_string"]
            ));
        }
        compared.push(type_name.to_string());
    }
    let msg = &json["type_description_msg"];
    let mut all = vec![&msg["type_description"]];
    all.extend(msg["referenced_type_descriptions"].as_array().unwrap());
    for d in all {
        let type_name = d["type_name"].as_str().unwrap();
        let Some(m) = set.get(type_name) else {
            failures.push(format!("{type_name}: rclev has no such type"));
            continue;
        };
        let ours = &set.description(&m.name).unwrap().type_description;
        let (a, b) = (
            field_summary(&ours.fields),
            official_field_summary(&d["fields"]),
        );
        if a != b {
            failures.push(format!(
                "{type_name} description:\n  ours   {a:?}\n  rosidl {b:?}"
            ));
        }
    }
    compared
}

/// Runs the oracle on `package_dir` and compares everything it produced with `set`; checks
/// that every type rclev has for `package` was among the compared hashes. Returns the count.
fn check_package(set: &TypeSet, package_dir: &Path, package: &str, out: &Path) -> usize {
    run_hash_oracle(package_dir, package, out);
    let files = json_files(out);
    let mut failures = Vec::new();
    let mut compared = BTreeSet::new();
    let mut count = 0;
    for file in &files {
        let json: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        for name in compare_json(set, &json, &mut failures) {
            count += 1;
            compared.insert(name);
        }
    }
    assert!(
        failures.is_empty(),
        "{package}: {} mismatches with rosidl:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let ours: BTreeSet<String> = set
        .types
        .keys()
        .filter(|t| t.package == package)
        .map(|t| t.to_string())
        .collect();
    let missing: Vec<&String> = ours.difference(&compared).collect();
    assert!(
        missing.is_empty(),
        "{package}: types never compared with rosidl: {missing:?}"
    );
    // rosidl writes one JSON per definition file (and one per derived type besides).
    let p = load_package_dir(package_dir).unwrap();
    for (kind, names) in [
        (
            "msg",
            p.messages.iter().map(|m| &m.name.name).collect::<Vec<_>>(),
        ),
        ("srv", p.services.iter().map(|s| &s.name.name).collect()),
        ("action", p.actions.iter().map(|a| &a.name.name).collect()),
    ] {
        for n in names {
            let json = out.join(kind).join(format!("{n}.json"));
            assert!(files.contains(&json), "{package}: no {}", json.display());
        }
    }
    eprintln!(
        "{package}: {count} hashes compared, {} distinct types",
        compared.len()
    );
    count
}

fn bundled_set_with(extra: &[&Package]) -> TypeSet {
    let bundled = bundled_packages().unwrap();
    let mut refs: Vec<&Package> = bundled.iter().collect();
    refs.extend(extra.iter().copied());
    TypeSet::build(&refs).unwrap_or_else(|e| panic!("{e}"))
}

/// Part 1: the shipped packages that have no wheel, hashed by the real rosidl pipeline.
#[test]
fn example_interfaces_and_tf2_msgs_match_rosidl() {
    let set = bundled_set_with(&[]);
    let tmp = scratch("shipped");
    let interfaces = manifest_dir().join("interfaces");
    let mut total = 0;
    for package in ["example_interfaces", "tf2_msgs"] {
        total += check_package(&set, &interfaces.join(package), package, &tmp.join(package));
    }
    assert!(total > 200, "only {total} hashes compared");
}

fn edge_dir(name: &str) -> PathBuf {
    manifest_dir().join("tests/fixtures").join(name)
}

/// Part 2: the edge-case fixture package, hashed and described by the real rosidl pipeline.
#[test]
fn edge_fixture_package_matches_rosidl() {
    let dir = edge_dir("edge_msgs");
    let edge = load_package_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(edge.name, "edge_msgs");
    let set = bundled_set_with(&[&edge]);
    let count = check_package(&set, &dir, "edge_msgs", &scratch("edge_msgs"));
    let own = set
        .types
        .keys()
        .filter(|t| t.package == "edge_msgs")
        .count();
    // 8 messages; 3 services × 4 types (request, response, event, service); 2 actions × 13
    // (goal, result, feedback, 2 services × 4, feedback message, action).
    assert_eq!(own, 8 + 3 * 4 + 2 * 13);
    assert!(count >= own);

    // Spot checks of what rclev makes of the quirks (all also compared with rosidl above).
    let strings = set.get("edge_msgs/msg/Strings").unwrap();
    let default = |name: &str| {
        let f = strings.fields.iter().find(|f| f.name == name).unwrap();
        default_text(f.default.as_ref().unwrap())
    };
    assert_eq!(default("s_hash"), "\"a"); // `#` starts a comment even inside quotes
    assert_eq!(default("s_tab"), "a\tb"); // escapes reach ROS 2 through the .idl
    assert_eq!(default("s_backslashes"), "C:\\dir");
    assert_eq!(default("sa_quirk"), "('\"x', 'y')"); // rosidl's string-array splitter
    let constants = set.get("edge_msgs/msg/Constants").unwrap();
    let constant = |name: &str| {
        default_text(
            &constants
                .constants
                .iter()
                .find(|c| c.name == name)
                .unwrap()
                .value,
        )
    };
    assert_eq!(constant("S_PATH"), "C:\\path\to");
    assert_eq!(constant("S_HASH"), "\"a");
    assert_eq!(constant("S_SPACES"), "x");
}

/// Part 2b: an unqualified `Header` in a package without one is std_msgs/Header in rclev (rosidl
/// would fail: it looks for `edge_header_msgs/Header`). Its hash equals rosidl's for the same
/// message written with `std_msgs/Header`.
#[test]
fn unqualified_header_means_std_msgs_header() {
    let dir = edge_dir("edge_header_msgs");
    let p = load_package_dir(&dir).unwrap();
    let set = bundled_set_with(&[&p]);
    let m = set.get("edge_header_msgs/msg/Stamped").unwrap();
    let d = &set.description(&m.name).unwrap();
    assert_eq!(
        d.type_description.fields[0].nested_type_name,
        "std_msgs/msg/Header"
    );
    // The explicit spelling, through rosidl.
    let tmp = scratch("edge_header_msgs");
    let explicit = tmp.join("src/edge_header_msgs");
    std::fs::create_dir_all(explicit.join("msg")).unwrap();
    let text = std::fs::read_to_string(dir.join("msg/Stamped.msg")).unwrap();
    std::fs::write(
        explicit.join("msg/Stamped.msg"),
        text.replace("\nHeader header", "\nstd_msgs/Header header"),
    )
    .unwrap();
    std::fs::copy(dir.join("package.xml"), explicit.join("package.xml")).unwrap();
    check_package(&set, &explicit, "edge_header_msgs", &tmp.join("out"));
}

// ---------------------------------------------------------------------------------------
// 3. Parse parity on small definitions.

/// (id, kind, text): a `.msg`, `.srv` or `.action` text, named M, S or A in package `pkg`.
const SNIPPETS: &[(&str, &str, &str)] = &[
    // Names.
    ("field name upper", "msg", "int32 Foo\n"),
    ("field name double underscore", "msg", "int32 a__b\n"),
    ("field name trailing underscore", "msg", "int32 a_\n"),
    ("field name digit first", "msg", "int32 1a\n"),
    ("field name underscore first", "msg", "int32 _a\n"),
    ("field name dash", "msg", "int32 a-b\n"),
    ("constant name lower", "msg", "int32 lower=1\n"),
    ("constant name double underscore", "msg", "int32 A__B=1\n"),
    ("constant name trailing underscore", "msg", "int32 A_=1\n"),
    ("constant name digit first", "msg", "int32 1A=1\n"),
    ("constant name mixed case", "msg", "int32 Ab=1\n"),
    ("field with = is a constant", "msg", "int32 a=5\n"),
    ("string default with = is a constant", "msg", "string s a=b\n"),
    ("missing name", "msg", "int32\n"),
    ("missing name after spaces", "msg", "int32   \n"),
    ("duplicate field", "msg", "int32 a\nint32 a\n"),
    ("duplicate constant", "msg", "int32 A=1\nint32 A=2\n"),
    // Integer ranges.
    ("uint8 over", "msg", "uint8 X=256\n"),
    ("uint8 negative", "msg", "uint8 X=-1\n"),
    ("int8 under", "msg", "int8 X=-129\n"),
    ("int8 over", "msg", "int8 X=128\n"),
    ("int16 over", "msg", "int16 X=32768\n"),
    ("uint16 over", "msg", "uint16 X=65536\n"),
    ("int32 over", "msg", "int32 X=2147483648\n"),
    ("uint32 negative", "msg", "uint32 X=-1\n"),
    ("int64 over", "msg", "int64 X=9223372036854775808\n"),
    ("int64 under", "msg", "int64 X=-9223372036854775809\n"),
    ("uint64 over", "msg", "uint64 X=18446744073709551616\n"),
    ("char over", "msg", "char C=256\n"),
    ("char negative", "msg", "char C=-1\n"),
    ("char literal", "msg", "char C='A'\n"),
    ("byte over", "msg", "byte B=256\n"),
    ("byte negative default", "msg", "byte b -1\n"),
    ("int8 array element over", "msg", "int8[] a [1, 128]\n"),
    // Numbers that are not.
    ("int letters", "msg", "int32 X=abc\n"),
    ("int with point", "msg", "int32 X=1.0\n"),
    ("int exponent", "msg", "int32 X=1e3\n"),
    ("int empty", "msg", "int32 X=\n"),
    ("int bare prefix", "msg", "int32 X=0x\n"),
    ("int double underscore", "msg", "int32 X=1__0\n"),
    ("int trailing underscore", "msg", "int32 X=10_\n"),
    ("int two values", "msg", "int32 a 5 6\n"),
    ("float letters", "msg", "float64 F=abc\n"),
    ("float underscore before point", "msg", "float64 f 1_.5\n"),
    ("float hex", "msg", "float64 f 0x10\n"),
    ("bool word", "msg", "bool B=yes\n"),
    ("bool two", "msg", "bool b 2\n"),
    // Strings.
    ("bounded string default too long", "msg", "string<=3 s \"abcd\"\n"),
    ("bounded string element too long", "msg", "string<=2[<=2] a [\"abc\"]\n"),
    ("unescaped inner quote", "msg", "string s \"a\"b\"\n"),
    ("newline escape", "msg", "string s \"a\\nb\"\n"),
    ("newline escape constant", "msg", "string S=a\\nb\n"),
    ("truncated hex escape", "msg", "string S=\"\\x4\"\n"),
    ("escape above latin-1", "msg", "string s \"\\u20ac\"\n"),
    ("latin-1 escape", "msg", "string s \"\\u00e9\"\n"),
    ("trailing backslash", "msg", "string S=abc\\\n"),
    ("non-ascii string array", "msg", "wstring[] w [\"ä\"]\n"),
    // Arrays and bounds.
    ("fixed array default too few", "msg", "int32[2] a [1]\n"),
    ("fixed array default too many", "msg", "int32[2] a [1, 2, 3]\n"),
    ("bounded default too many", "msg", "int32[<=2] a [1, 2, 3]\n"),
    ("array default without brackets", "msg", "int32[] a 1\n"),
    ("array default trailing comma", "msg", "int32[] a [1,]\n"),
    ("array default blank", "msg", "int32[] a [ ]\n"),
    ("string array default blank", "msg", "string[] a [ ]\n"),
    ("string array comma space", "msg", "string[] a [\"a\", ]\n"),
    ("string array unclosed", "msg", "string[] a [\"a]\n"),
    ("array size zero", "msg", "int32[0] a\n"),
    ("array size negative", "msg", "int32[-1] a\n"),
    ("bound zero", "msg", "int32[<=0] a\n"),
    ("bound empty", "msg", "int32[<=] a\n"),
    ("array size word", "msg", "int32[x] a\n"),
    ("string bound zero", "msg", "string<=0 s\n"),
    ("string bound negative", "msg", "string<=-1 s\n"),
    ("two dimensions", "msg", "int32[3][2] a\n"),
    ("unbalanced bracket", "msg", "int32] a\n"),
    // Constants that cannot be.
    ("array constant", "msg", "int32[] A=1\n"),
    ("fixed array constant", "msg", "int32[2] A=[1, 2]\n"),
    ("message constant", "msg", "std_msgs/Header H=1\n"),
    ("bounded string constant", "msg", "string<=5 S=abc\n"),
    ("nested default", "msg", "std_msgs/Header h 1\n"),
    // Types.
    ("time", "msg", "time t\n"),
    ("duration", "msg", "duration d\n"),
    ("time constant", "msg", "time T=1\n"),
    ("int128", "msg", "int128 a\n"),
    ("float16", "msg", "float16 a\n"),
    ("uint", "msg", "uint a\n"),
    ("wchar", "msg", "wchar c\n"),
    ("unknown same-package type", "msg", "Int32 a\n"),
    ("unknown other-package type", "msg", "nosuch_msgs/Thing t\n"),
    ("unknown type in known package", "msg", "std_msgs/NoSuch n\n"),
    ("bad package name", "msg", "Bad_Pkg/Foo f\n"),
    ("three-part non-msg type", "msg", "std_msgs/srv/Header h\n"),
    ("request suffix type", "msg", "Foo_Request f\n"),
    ("sample prefix type", "msg", "Sample_Foo f\n"),
    // Layout.
    ("indented member", "msg", "  int32 a\n"),
    ("tab-indented member", "msg", "\tint32 a\n"),
    ("indented constant", "msg", " int32 A=1\n"),
    ("no-break space separator", "msg", "int32\u{a0}a\n"),
    ("separator in a msg", "msg", "int32 a\n---\nint32 b\n"),
    ("srv without separator", "srv", "int32 a\nint32 b\n"),
    ("srv with two separators", "srv", "int32 a\n---\nint32 b\n---\n"),
    ("srv separator trailing space", "srv", "int32 a\n--- \nint32 b\n"),
    ("srv separator indented", "srv", "int32 a\n ---\nint32 b\n"),
    ("srv bad response", "srv", "int32 a\n---\nint32 B=x\n"),
    ("srv empty file", "srv", ""),
    ("action with one separator", "action", "int32 a\n---\nint32 b\n"),
    ("action with three separators", "action", "---\n---\n---\n"),
    ("action bad feedback", "action", "---\n---\nfoo bar\n"),
    // Valid, if odd.
    ("tab separator", "msg", "int32\ta\n"),
    ("tabs around default", "msg", "int32\ta\t\t5\t\n"),
    ("double space default", "msg", "int32 a  5\n"),
    ("trailing spaces", "msg", "int32 a   \n"),
    ("comment after default", "msg", "int32 a 5 # five\n"),
    ("hash inside quoted default", "msg", "string s \"a # b\"\n"),
    ("hash inside quoted constant", "msg", "string S=\"a # b\"\n"),
    ("indented comment", "msg", "int32 a\n    # more about a\n"),
    ("crlf", "msg", "int32 a\r\nint32 b\r\n"),
    ("lone cr", "msg", "int32 a\rint32 b\n"),
    ("form feed breaks lines", "msg", "int32 a\x0cint32 b\n"),
    ("bool one", "msg", "bool b 1\n"),
    ("bool upper", "msg", "bool B=TRUE\n"),
    ("float from int", "msg", "float64 f 1\n"),
    ("int plus", "msg", "int32 a +5\n"),
    ("int underscore", "msg", "int32 a 1_000\n"),
    ("int hex", "msg", "int32 a 0x1F\n"),
    ("int negative hex", "msg", "int32 A=-0x10\n"),
    ("int hex underscore", "msg", "int32 a 0x_1f\n"),
    ("int octal", "msg", "int32 a 0o17\n"),
    ("int binary", "msg", "int32 a 0b101\n"),
    ("int leading zero", "msg", "int32 a 010\n"),
    ("uint negative zero", "msg", "uint8 a -0\n"),
    ("char hex", "msg", "char c 0x41\n"),
    ("char max", "msg", "char C=255\n"),
    ("byte hex", "msg", "byte B=0x7f\n"),
    ("int64 min", "msg", "int64 A=-9223372036854775808\n"),
    ("uint64 max", "msg", "uint64 a 18446744073709551615\n"),
    ("array size plus", "msg", "int32[+3] a\n"),
    ("array size underscore", "msg", "int32[1_0] a\n"),
    ("string bound underscore", "msg", "string<=1_0 s\n"),
    ("float inf", "msg", "float64 f inf\n"),
    ("float minus inf", "msg", "float64 f -inf\n"),
    ("float nan", "msg", "float64 f nan\n"),
    ("float infinity", "msg", "float64 F=Infinity\n"),
    ("float overflow", "msg", "float64 f 1e400\n"),
    ("float32 over float range", "msg", "float32 f 1e39\n"),
    ("float point first", "msg", "float64 f .5\n"),
    ("float point last", "msg", "float64 f 5.\n"),
    ("float minus zero", "msg", "float64 f -0.0\n"),
    ("float underscore", "msg", "float64 f 1_000.5\n"),
    ("float tenth", "msg", "float32 f 0.1\n"),
    ("float big", "msg", "float32 F=1e20\n"),
    ("string constant empty", "msg", "string S=\n"),
    ("string constant lone quote", "msg", "string S=\"\n"),
    ("string constant unquoted words", "msg", "string S=hello world\n"),
    ("string single quotes escaped", "msg", "string s 'it\\'s'\n"),
    ("string double quotes escaped", "msg", "string s \"say \\\"hi\\\"\"\n"),
    ("string tab escape", "msg", "string s \"a\\tb\"\n"),
    ("string path constant", "msg", "string S=C:\\path\\to\n"),
    ("string hex and octal escapes", "msg", "string s \"\\x41\\101\"\n"),
    ("string utf-8 by escapes", "msg", "string s \"\\xc3\\xa9\"\n"),
    ("string backslashes", "msg", "string s \"\\\\\\\\\"\n"),
    ("string question escape", "msg", "string s \"\\?\"\n"),
    ("string unknown escape", "msg", "string s \"a\\qb\"\n"),
    ("string escaped quote in single", "msg", "string s '\\\"'\n"),
    ("bounded string counts characters", "msg", "string<=3 s \"äää\"\n"),
    ("wstring non-ascii", "msg", "wstring w \"äöü€\"\n"),
    ("wstring bounded", "msg", "wstring<=2 w \"äö\"\n"),
    ("string array trailing comma", "msg", "string[] a [\"a\",]\n"),
    ("string array strips", "msg", "string[] a [\" a \"]\n"),
    ("string array requotes", "msg", "string[] a [\"'x'\"]\n"),
    ("string array escaped quote quirk", "msg", "string[] a [\"\\\"x\\\"y\"]\n"),
    ("string array mixed", "msg", "string[] a [\"x\\\"y\", 'p,q', r , \"\"]\n"),
    ("string array escapes kept", "msg", "string[] a [\"a\\tb\", \"c\\\\d\"]\n"),
    ("empty arrays", "msg", "string[<=3] a []\nint32[] b []\nbool[] c []\n"),
    ("bool array", "msg", "bool[] b [true, False, 1, 0]\n"),
    ("byte array", "msg", "byte[] b [0, 255, 0x10]\nuint8[] u [1, 2]\n"),
    ("float array", "msg", "float64[<=4] f [inf, -inf, nan, -0.0]\n"),
    ("keyword field names", "msg", "int32 type\nint32 match\nint32 loop\nint32 ref\nint32 self\nint32 module\nint32 struct\nstring string\n"),
    ("keyword-like constant names", "msg", "int32 TRUE=1\nint32 FALSE=0\nint32 SELF=2\n"),
    ("constant and field", "msg", "int32 X=1\nint32 x 2\n"),
    ("empty msg", "msg", ""),
    ("comment-only msg", "msg", "# nothing here\n\n# at all\n"),
    ("cross-package types", "msg", "std_msgs/Header h\nbuiltin_interfaces/Time t\ngeometry_msgs/Pose[<=2] p\n"),
    ("srv both empty", "srv", "---\n"),
    ("srv empty request", "srv", "---\nint32 sum\n"),
    ("srv with constants and defaults", "srv", "# doc\nint32 A=1\nint32 a 5\n---\nstring s \"x\"\n"),
    ("srv crlf", "srv", "int32 a\r\n---\r\nint32 b\r\n"),
    ("action all empty", "action", "---\n---\n"),
    ("action full", "action", "int32 order 3\n---\nint32[] sequence\n---\nint32[] partial [1, 2]\n"),
    // Escape and splitting corners (id: the line itself).
    ("corner: string s \"\\\\\\\"\"", "msg", "string s \"\\\\\\\"\"
"),
    ("corner: string s '\\\\'", "msg", "string s '\\\\'
"),
    ("corner: string s \"a\\\\\\\\\\\"b\"", "msg", "string s \"a\\\\\\\\\\\"b\"
"),
    ("corner: string s \"\\0\"", "msg", "string s \"\\0\"
"),
    ("corner: string s \"\\777\"", "msg", "string s \"\\777\"
"),
    ("corner: string s \"\\x41\\x4\"", "msg", "string s \"\\x41\\x4\"
"),
    ("corner: string s \"\\U0001F600\"", "msg", "string s \"\\U0001F600\"
"),
    ("corner: string s \"\\\\x41\"", "msg", "string s \"\\\\x41\"
"),
    ("corner: string S=\\\"", "msg", "string S=\\\"
"),
    ("corner: string S=a\\\\\"b", "msg", "string S=a\\\\\"b
"),
    ("corner: string s \"\\\\\\\\\\\\\"", "msg", "string s \"\\\\\\\\\\\\\"
"),
    ("corner: string S=\\x41\\\\n", "msg", "string S=\\x41\\\\n
"),
    ("corner: string s \"é\\t\"", "msg", "string s \"é\\t\"
"),
    ("corner: string S=\\a\\b\\f\\v", "msg", "string S=\\a\\b\\f\\v
"),
    ("corner: string S=\\x7f", "msg", "string S=\\x7f
"),
    ("corner: string S=\\U00000041", "msg", "string S=\\U00000041
"),
    ("corner: string S=\"\\\\?\"", "msg", "string S=\"\\\\?\"
"),
    ("corner: string[] a ['\\\\', \\\"\\\\\\\\\\\"]", "msg", "string[] a ['\\\\', \\\"\\\\\\\\\\\"]
"),
    ("corner: string[] a [\"\\x41\"]", "msg", "string[] a [\"\\x41\"]
"),
    ("corner: string[] a [\\\"it's\\\"]", "msg", "string[] a [\\\"it's\\\"]
"),
    ("corner: string[] a [\\\"it's \\\\\\\"x\\\\\\\"\\\"]", "msg", "string[] a [\\\"it's \\\\\\\"x\\\\\\\"\\\"]
"),
    ("corner: string[] a [\"a\", \"b\" ,\"c\"]", "msg", "string[] a [\"a\", \"b\" ,\"c\"]
"),
    ("corner: string[] a [\"a\"\"b\"]", "msg", "string[] a [\"a\"\"b\"]
"),
    ("corner: string[] a ['a'\"b\"]", "msg", "string[] a ['a'\"b\"]
"),
    ("corner: string[] a [a b, c]", "msg", "string[] a [a b, c]
"),
    ("corner: int32[] a [ 1 , 2 ]", "msg", "int32[] a [ 1 , 2 ]
"),
    ("corner: int32[] a [1 2]", "msg", "int32[] a [1 2]
"),
    ("corner: string s \"a\"x", "msg", "string s \"a\"x
"),
    ("corner: string s x\"a\"", "msg", "string s x\"a\"
"),
    ("three-part msg type", "msg", "std_msgs/msg/Header h\n"),
    // Deliberate differences (see DELIBERATE).
    ("unqualified Header", "msg", "Header h\n"),
    ("non-ascii digits", "msg", "int32 a \u{661}\u{662}\n"),
    ("bad escape in a comment", "msg", "int32 a # see \\x\n"),
    ("named escape", "msg", "string s \"\\N{LATIN SMALL LETTER A}\"\n"),
];

/// Where rclev differs from rosidl on purpose: (id, rclev accepts, rosidl accepts, why).
const DELIBERATE: &[(&str, bool, bool, &str)] = &[
    (
        "unqualified Header",
        true,
        false,
        "rclev resolves an unqualified `Header` to std_msgs/Header when the package has \
         none (ROS 1 habit, kept by many user packages); rosidl looks for pkg/Header",
    ),
    (
        "non-ascii digits",
        false,
        true,
        "Python's int() takes any Unicode decimal digit; rclev takes ASCII digits only",
    ),
    (
        "bad escape in a comment",
        true,
        false,
        "rosidl copies comments into the .idl through Python's unicode_escape codec and fails \
         on malformed escapes there; rclev does not check comment text",
    ),
    (
        "named escape",
        false,
        true,
        "rclev does not resolve Python's \\N{…} escapes (Unicode names) in string values",
    ),
];

fn snippet_path(kind: &str) -> PathBuf {
    let name = match kind {
        "msg" => "M",
        "srv" => "S",
        _ => "A",
    };
    PathBuf::from(format!("{kind}/{name}.{kind}"))
}

/// rclev's verdict: parse the snippet as a package `pkg`, then resolve it with the shipped
/// packages. Ok holds the type set.
fn rclev_verdict(kind: &str, text: &str) -> Result<TypeSet, rclev_codegen::Error> {
    static BUNDLED: std::sync::OnceLock<Vec<Package>> = std::sync::OnceLock::new();
    let path = snippet_path(kind);
    let p = parse_package("pkg", [(path.as_path(), text)])?;
    let bundled = BUNDLED.get_or_init(|| bundled_packages().unwrap());
    let mut refs: Vec<&Package> = bundled.iter().collect();
    refs.push(&p);
    TypeSet::build(&refs)
}

/// Starts `rosidl_parse.py` on the snippets; [`rosidl_results`] collects its answer.
fn start_rosidl_parse(snippets: &[(&str, &str, &str)]) -> std::process::Child {
    let request = json!({
        "package": "pkg",
        "snippets": snippets
            .iter()
            .map(|(id, kind, text)| json!({"id": id, "kind": kind, "text": text}))
            .collect::<Vec<_>>(),
    });
    let mut child = Command::new(python())
        .arg(manifest_dir().join("tests/fixtures/rosidl_parse.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the oracle venv's python");
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, request.to_string().as_bytes()).unwrap();
    drop(stdin);
    child
}

fn rosidl_results(child: std::process::Child) -> Vec<Value> {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "rosidl_parse.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    answer["results"].as_array().unwrap().clone()
}

/// Part 3: rclev accepts exactly the definitions rosidl accepts (except [`DELIBERATE`]),
/// reads the accepted ones the same way (hashes, descriptions with defaults, constants as the
/// .idl carries them), and locates every rejection on a line.
#[test]
fn parse_parity_with_rosidl() {
    let ids: BTreeSet<&str> = SNIPPETS.iter().map(|s| s.0).collect();
    assert_eq!(ids.len(), SNIPPETS.len(), "snippet ids are unique");
    let child = start_rosidl_parse(SNIPPETS);
    // rclev's verdicts while Python works.
    let verdicts: Vec<_> = SNIPPETS
        .iter()
        .map(|(_, kind, text)| rclev_verdict(kind, text))
        .collect();
    let results = rosidl_results(child);
    assert_eq!(results.len(), SNIPPETS.len());
    let deliberate: BTreeMap<&str, (bool, bool)> =
        DELIBERATE.iter().map(|d| (d.0, (d.1, d.2))).collect();
    let mut failures = Vec::new();
    let (mut both_accept, mut both_reject, mut parse_only) = (0, 0, 0);
    for (((id, kind, text), r), ours) in SNIPPETS.iter().zip(&results).zip(verdicts) {
        assert_eq!(r["id"], *id);
        let parse_ok = r["parse"]["ok"].as_bool().unwrap();
        let rosidl_ok = parse_ok && r["pipeline"]["ok"].as_bool().unwrap();
        if parse_ok && !rosidl_ok {
            parse_only += 1;
        }
        let rosidl_error = if !parse_ok {
            r["parse"]["error"].as_str().unwrap().to_string()
        } else {
            r["pipeline"]["error"].as_str().unwrap_or("").to_string()
        };
        let rclev_ok = ours.is_ok();
        if let Some(&(want_rclev, want_rosidl)) = deliberate.get(id) {
            if (rclev_ok, rosidl_ok) != (want_rclev, want_rosidl) {
                failures.push(format!(
                    "{id:?}: documented as rclev {want_rclev} / rosidl {want_rosidl}, now \
                     rclev {rclev_ok} / rosidl {rosidl_ok} ({rosidl_error}; {:?})",
                    ours.as_ref().err().map(|e| e.to_string())
                ));
            }
            continue;
        }
        match (&ours, rosidl_ok) {
            (Ok(_), false) => failures.push(format!(
                "{id:?}: rclev accepts, rosidl rejects: {rosidl_error}\n    {text:?}"
            )),
            (Err(e), true) => failures.push(format!(
                "{id:?}: rclev rejects ({e}), rosidl accepts\n    {text:?}"
            )),
            (Err(e), false) => {
                both_reject += 1;
                if e.line.is_none() || e.message.trim().is_empty() {
                    failures.push(format!("{id:?}: error without line or message: {e:?}"));
                }
                let file = snippet_path(kind);
                if !e.to_string().starts_with(&format!("{}:", file.display())) {
                    failures.push(format!("{id:?}: error does not name the file: {e}"));
                }
            }
            (Ok(set), true) => {
                both_accept += 1;
                let before = failures.len();
                compare_accepted(set, r, &mut failures);
                for f in &mut failures[before..] {
                    *f = format!("{id:?} {text:?}: {f}");
                }
            }
        }
    }
    eprintln!(
        "{} snippets: {both_accept} accepted by both, {both_reject} rejected by both \
         ({parse_only} of them pass rosidl_adapter's parser but fail later in the pipeline), \
         {} deliberate differences",
        SNIPPETS.len(),
        DELIBERATE.len()
    );
    assert!(
        failures.is_empty(),
        "{} disagreements with rosidl:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(both_accept >= 60 && both_reject >= 80, "table too small");
}

/// For a snippet both accept: every hash and description the pipeline wrote, the constants
/// as rosidl_parser read them back from the .idl, and the member names rosidl_adapter parsed.
fn compare_accepted(set: &TypeSet, r: &Value, failures: &mut Vec<String>) {
    let pipeline = &r["pipeline"];
    compare_json(set, &pipeline["json"], failures);
    for m in pipeline["idl_messages"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        let Some(ours) = set.get(name) else {
            failures.push(format!("{name}: rclev has no such type"));
            continue;
        };
        let theirs: Vec<(String, String)> = m["constants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["value"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let mine: Vec<(String, String)> = ours
            .constants
            .iter()
            .map(|c| (c.name.clone(), default_text(&c.value)))
            .collect();
        if mine != theirs {
            failures.push(format!(
                "{name} constants:\n  ours   {mine:?}\n  rosidl {theirs:?}"
            ));
        }
    }
    // rosidl_adapter's own parse: the same members, in the same order.
    let parsed = r["parse"]["messages"].as_array().unwrap();
    let ours: Vec<&rclev_codegen::model::Message> = set
        .types
        .values()
        .filter(|m| m.name.package == "pkg" && !m.source.as_os_str().is_empty())
        .filter(|m| {
            parsed
                .iter()
                .any(|p| p["name"].as_str() == Some(m.name.name.as_str()))
        })
        .collect();
    assert_eq!(ours.len(), parsed.len(), "{parsed:?}");
    for p in parsed {
        let m = ours
            .iter()
            .find(|m| p["name"].as_str() == Some(m.name.name.as_str()))
            .unwrap();
        let names = |key: &str| -> Vec<String> {
            p[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["name"].as_str().unwrap().to_string())
                .collect()
        };
        let fields: Vec<String> = m.fields.iter().map(|f| f.name.clone()).collect();
        let constants: Vec<String> = m.constants.iter().map(|c| c.name.clone()).collect();
        if fields != names("fields") || constants != names("constants") {
            failures.push(format!(
                "{}: members ours {fields:?} {constants:?}, rosidl_adapter {p}",
                m.name
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------
// 4. Errors through the Builder name the file and the line.

fn broken_package(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = scratch(name).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("package.xml"),
        format!("<package format=\"3\"><name>{name}</name></package>\n"),
    )
    .unwrap();
    for (rel, text) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn builder_error(dir: &Path) -> rclev_codegen::Error {
    let out = dir.parent().unwrap().join("out.rs");
    let e = rclev_codegen::Builder::new()
        .package_dir(dir)
        .search_ament_prefix_path(false)
        .output(&out)
        .generate()
        .expect_err("a broken package must not generate");
    assert!(!out.exists(), "nothing is written on error");
    e
}

#[test]
fn builder_errors_name_file_and_line() {
    // A bad value on line 3.
    let dir = broken_package(
        "broken_value_msgs",
        &[
            ("msg/Fine.msg", "int32 a\n"),
            (
                "msg/Broken.msg",
                "# A comment on line 1\nint32 a\nuint8 X=300\n",
            ),
        ],
    );
    let e = builder_error(&dir);
    let file = dir.join("msg/Broken.msg");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{}:3:", file.display())),
        "{shown}"
    );
    assert_eq!((e.file.as_path(), e.line), (file.as_path(), Some(3)));
    assert!(
        shown.contains("300") && shown.contains("out of range"),
        "{shown}"
    );

    // A reference to a package nobody provides, on line 2.
    let dir = broken_package(
        "broken_ref_msgs",
        &[("msg/Ref.msg", "int32 a\nnosuch_msgs/Thing thing\n")],
    );
    let e = builder_error(&dir);
    let file = dir.join("msg/Ref.msg");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{}:2:", file.display())),
        "{shown}"
    );
    assert!(
        shown.contains("nosuch_msgs/Thing") && shown.contains("thing"),
        "{shown}"
    );

    // A type a shipped package does not have, in a service response on line 4.
    let dir = broken_package(
        "broken_srv_msgs",
        &[("srv/Ask.srv", "int32 a\n---\nint32 b\nstd_msgs/NoSuch n\n")],
    );
    let e = builder_error(&dir);
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{}:4:", dir.join("srv/Ask.srv").display())),
        "{shown}"
    );
    assert!(
        shown.contains("std_msgs/NoSuch") && shown.contains("std_msgs"),
        "{shown}"
    );

    // A same-package type that does not exist, in an action's feedback on line 5.
    let dir = broken_package(
        "broken_action_msgs",
        &[(
            "action/Go.action",
            "int32 a\n---\nint32 b\n---\nMissing m\n",
        )],
    );
    let e = builder_error(&dir);
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{}:5:", dir.join("action/Go.action").display())),
        "{shown}"
    );
    assert!(shown.contains("broken_action_msgs/Missing"), "{shown}");

    // A missing separator points at the end of the file.
    let dir = broken_package("broken_sep_msgs", &[("srv/Ask.srv", "int32 a\nint32 b\n")]);
    let e = builder_error(&dir);
    assert_eq!(e.line, Some(2), "{e}");
    assert!(e.to_string().contains("'---'"), "{e}");
}
