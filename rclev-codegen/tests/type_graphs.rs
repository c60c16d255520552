//! Packages whose types form deep chains, wide types, "diamonds" and cycles, generated
//! (proptest) and read as a tool reads an installed package or a bag's schema: parsed,
//! resolved and one type described. The rules: a cycle is an error of one short line, anything
//! else resolves; resolving never recurses on the types' depth (a chain of 200,000 types is
//! resolved), and describing a type walks each type it references once, however many paths
//! lead there.
//!
//! `RCLEV_FUZZ_CASES` sets the number of packages per property (default 256, for CI).

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rclev_codegen::{parse_package, Package, TypeName, TypeSet};

fn cases() -> u32 {
    std::env::var("RCLEV_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Package `pkg` with type `T{i}` holding, per entry of `nests[i]`, a field of that type
/// (arrays and sequences alternating), and a `uint8` after them.
fn package(nests: &[Vec<usize>]) -> Package {
    let files: Vec<(PathBuf, String)> = nests
        .iter()
        .enumerate()
        .map(|(i, targets)| {
            let mut text = String::new();
            for (k, t) in targets.iter().enumerate() {
                let container = ["", "[2]", "[]", "[<=3]"][k % 4];
                text.push_str(&format!("T{t}{container} f{k}\n"));
            }
            text.push_str("uint8 last\n");
            (PathBuf::from(format!("pkg/msg/T{i}.msg")), text)
        })
        .collect();
    parse_package("pkg", files.iter().map(|(p, t)| (p.as_path(), t.as_str()))).unwrap()
}

fn reaches_a_cycle(nests: &[Vec<usize>]) -> bool {
    // Kahn's algorithm: the types left over are on or above a cycle.
    let n = nests.len();
    let mut users = vec![0usize; n];
    for targets in nests {
        for &t in targets {
            users[t] += 1;
        }
    }
    let mut free: Vec<usize> = (0..n).filter(|&t| users[t] == 0).collect();
    let mut removed = 0;
    while let Some(t) = free.pop() {
        removed += 1;
        for &c in &nests[t] {
            users[c] -= 1;
            if users[c] == 0 {
                free.push(c);
            }
        }
    }
    removed < n
}

fn check(nests: &[Vec<usize>]) -> Result<(), TestCaseError> {
    let generated = package(nests);
    match TypeSet::build(&[&generated]) {
        Ok(set) => {
            prop_assert!(!reaches_a_cycle(nests));
            let root = TypeName::msg("pkg", "T0");
            let d = set.description(&root).unwrap();
            // Each type it references, once.
            let mut names: Vec<&str> = d
                .referenced_type_descriptions
                .iter()
                .map(|r| r.type_name.as_str())
                .collect();
            let total = names.len();
            names.dedup();
            prop_assert_eq!(names.len(), total);
            prop_assert!(total < nests.len());
            prop_assert!(set.hash_string(&root).unwrap().starts_with("RIHS01_"));
        }
        Err(e) => {
            prop_assert!(reaches_a_cycle(nests), "{e}");
            let text = e.to_string();
            prop_assert!(text.contains("contains itself"), "{text}");
            prop_assert!(text.len() < 300, "{text}");
        }
    }
    Ok(())
}

#[test]
fn generated_packages_resolve_unless_a_type_contains_itself() {
    let graphs = (1usize..40)
        .prop_flat_map(|n| proptest::collection::vec(proptest::collection::vec(0..n, 0..5), n));
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&graphs, |nests| check(&nests))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn acyclic_layered_packages_diamonds_included_resolve() {
    // Type i nests `width` fields of each of the next `fanout` types: 2^n paths for a diamond.
    let graphs = (1usize..60, 1usize..4, 1usize..4).prop_map(|(n, width, fanout)| {
        (0..n)
            .map(|i| {
                (i + 1..n)
                    .take(fanout)
                    .flat_map(|t| std::iter::repeat_n(t, width))
                    .collect()
            })
            .collect::<Vec<Vec<usize>>>()
    });
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&graphs, |nests| check(&nests))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// The defect: resolving a type nested 100,000 deep overflowed the stack (a recursive
/// acyclicity check), and describing every type of a 10,000-deep chain was quadratic.
#[test]
fn a_chain_deeper_than_any_stack_resolves_and_its_cycle_is_one_short_line() {
    let n = 200_000;
    let chain: Vec<Vec<usize>> = (0..n)
        .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
        .collect();
    let chained = package(&chain);
    let set = TypeSet::build(&[&chained]).unwrap();
    let d = set.description(&TypeName::msg("pkg", "T0")).unwrap();
    assert_eq!(d.referenced_type_descriptions.len(), n - 1);

    let mut cyclic = chain;
    cyclic[n - 1] = vec![0];
    let e = TypeSet::build(&[&package(&cyclic)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("contains itself"), "{e}");
    assert!(e.contains("199996 more"), "{e}");
    assert!(e.len() < 300, "{e}");
}
