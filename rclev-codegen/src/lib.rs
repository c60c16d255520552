//! # rclev-codegen — Rust types for ROS 2 interfaces
//!
//! Reads `.msg`, `.srv` and `.action` files with ROS 2's rules, resolves references across
//! packages, computes each type's REP-2016 description and RIHS01 hash, and writes Rust code
//! for [rclev](https://docs.rs/rclev): a struct per message (public fields, `Default` from the
//! definition's defaults, constants as associated consts, CDR encoding that matches ROS 2
//! byte for byte), a unit type per service and action.
//!
//! Call it from `build.rs`:
//!
//! ```no_run
//! // build.rs: `fn main() {` … `}`
//! rclev_codegen::Builder::new()
//!     .package_dir("interfaces/my_msgs")
//!     .generate()
//!     .unwrap_or_else(|e| panic!("{e}"));
//! ```
//!
//! and include the result where the types should live:
//!
//! ```ignore
//! rclev::include_interfaces!();           // defines `pub mod my_msgs { pub mod msg { … } … }`
//! use my_msgs::msg::Telemetry;
//! ```
//!
//! The standard interfaces (std_msgs, geometry_msgs, sensor_msgs, …; see [`bundled_packages`])
//! ship with rclev as `rclev::interfaces::<pkg>`. A user definition that references one of
//! them uses rclev's type; it is never generated twice. Packages that are neither given nor
//! shipped are looked up in `AMENT_PREFIX_PATH` (`<prefix>/share/<pkg>/{msg,srv,action}`), as
//! in a sourced ROS 2 workspace.

#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub mod describe;
mod emit;
mod error;
pub mod model;
pub mod parse;
pub mod resolve;

pub use emit::field_ident;
pub use error::{Error, Result};
pub use model::{Package, TypeName};
pub use resolve::TypeSet;

mod bundled {
    include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
}

/// The name of the file [`Builder::generate`] writes into `OUT_DIR`, and that
/// `rclev::include_interfaces!()` includes.
pub const OUTPUT_FILE: &str = "rclev_interfaces.rs";

/// Reads one interface package: `dir/msg/*.msg`, `dir/srv/*.srv`, `dir/action/*.action`.
///
/// The package name is `<name>` in `dir/package.xml`, or else the directory's name.
pub fn load_package_dir(dir: &Path) -> Result<Package> {
    let name = package_name(dir)?;
    let mut files = Vec::new();
    for kind in ["msg", "srv", "action"] {
        let sub = dir.join(kind);
        if !sub.is_dir() {
            continue;
        }
        let entries = std::fs::read_dir(&sub)
            .map_err(|e| Error::in_file(&sub, format!("cannot read directory: {e}")))?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some(kind))
            .collect();
        paths.sort();
        for path in paths {
            let text = read_interface_file(&path)?;
            files.push((path, text));
        }
    }
    if files.is_empty() {
        return Err(Error::in_file(
            dir,
            "no interface files: expected msg/*.msg, srv/*.srv or action/*.action",
        ));
    }
    parse_package(&name, files.iter().map(|(p, t)| (p.as_path(), t.as_str())))
}

/// The largest interface file read: the largest real ones, comments included, are a few KiB.
/// An installed tree is read by tools at run time, so a huge file is refused, not loaded.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

fn read_interface_file(path: &Path) -> Result<String> {
    use std::io::Read as _;
    let file =
        std::fs::File::open(path).map_err(|e| Error::in_file(path, format!("cannot read: {e}")))?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::in_file(path, format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::in_file(
            path,
            format!("larger than {MAX_FILE_BYTES} bytes: not an interface file"),
        ));
    }
    Ok(text)
}

/// Parses a package from `(path, text)` pairs; the extension of each path says its kind and
/// its stem the type's name.
pub fn parse_package<'a>(
    name: &str,
    files: impl IntoIterator<Item = (&'a Path, &'a str)>,
) -> Result<Package> {
    if !parse::is_package_name(name) {
        return Err(Error::in_file(
            Path::new(name),
            format!("'{name}' is not a valid package name (lower snake case)"),
        ));
    }
    let mut package = Package {
        name: name.into(),
        ..Package::default()
    };
    for (path, text) in files {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| Error::in_file(path, "file name is not UTF-8"))?;
        if !parse::is_type_name(stem) {
            return Err(Error::in_file(
                path,
                format!("'{stem}' is not a valid type name: names are CamelCase (A-Z, a-z, 0-9), starting upper case"),
            ));
        }
        if stem == "Self" {
            return Err(Error::in_file(path, "'Self' is reserved in Rust"));
        }
        match path.extension().and_then(|e| e.to_str()) {
            Some("msg") => {
                let mut message = parse::parse_message(text, TypeName::msg(name, stem), path, 1)?;
                message.source_text = Some(text.into());
                package.messages.push(message);
            }
            Some("srv") => package
                .services
                .push(parse::parse_service(text, name, stem, path)?),
            Some("action") => package
                .actions
                .push(parse::parse_action(text, name, stem, path)?),
            _ => {
                return Err(Error::in_file(
                    path,
                    "not an interface file (.msg, .srv or .action)",
                ))
            }
        }
    }
    Ok(package)
}

fn package_name(dir: &Path) -> Result<String> {
    let xml = dir.join("package.xml");
    if let Ok(text) = std::fs::read_to_string(&xml) {
        if let Some(start) = text.find("<name>") {
            if let Some(len) = text[start + 6..].find("</name>") {
                return Ok(text[start + 6..start + 6 + len].trim().to_string());
            }
        }
        return Err(Error::in_file(&xml, "no <name> element"));
    }
    dir.canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .ok_or_else(|| Error::in_file(dir, "cannot tell the package name: no package.xml"))
}

/// The standard interface packages that ship with rclev (`rclev::interfaces::<pkg>`).
pub fn bundled_packages() -> Result<Vec<Package>> {
    let mut by_package: BTreeMap<&str, Vec<(&Path, &str)>> = BTreeMap::new();
    for (rel, abs, text) in bundled::BUNDLED {
        let package = rel.split('/').next().unwrap_or_default();
        by_package
            .entry(package)
            .or_default()
            .push((Path::new(*abs), *text));
    }
    by_package
        .into_iter()
        .map(|(name, files)| parse_package(name, files))
        .collect()
}

/// The first `<prefix>/share/<package>` with interfaces, searching `extra` prefixes first,
/// then those in `AMENT_PREFIX_PATH`.
pub fn find_in_prefixes(package: &str, extra: &[PathBuf]) -> Option<PathBuf> {
    let from_env = std::env::var_os("AMENT_PREFIX_PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    extra
        .iter()
        .chain(from_env.iter())
        .map(|prefix| prefix.join("share").join(package))
        .find(|dir| {
            ["msg", "srv", "action"]
                .iter()
                .any(|k| dir.join(k).is_dir())
        })
}

/// Generates Rust code for interface packages; see the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct Builder {
    dirs: Vec<PathBuf>,
    ament_packages: Vec<String>,
    extern_packages: Vec<(PathBuf, String)>,
    prefixes: Vec<PathBuf>,
    search_ament: bool,
    output: Option<PathBuf>,
    rclev: String,
    bundled_local: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// A builder with no packages, looking up unknown dependencies in `AMENT_PREFIX_PATH`,
    /// writing `$OUT_DIR/rclev_interfaces.rs`.
    pub fn new() -> Self {
        Self {
            dirs: Vec::new(),
            ament_packages: Vec::new(),
            extern_packages: Vec::new(),
            prefixes: Vec::new(),
            search_ament: true,
            output: None,
            rclev: "::rclev".into(),
            bundled_local: false,
        }
    }

    /// Generates the package in `dir` (with `msg/`, `srv/`, `action/` and a `package.xml`).
    pub fn package_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dirs.push(dir.into());
        self
    }

    /// Generates an installed package found through `AMENT_PREFIX_PATH`
    /// (`<prefix>/share/<name>`). A package rclev ships is taken from rclev instead.
    pub fn ament_package(mut self, name: impl Into<String>) -> Self {
        self.ament_packages.push(name.into());
        self
    }

    /// Uses the package in `dir` as already generated elsewhere — by another crate of yours —
    /// at Rust path `module` (e.g. `::robot_interfaces::robot_msgs`): its definitions are
    /// read, to hash and check the types that reference it, but not generated again, so those
    /// types are shared across crates as rclev's own are.
    pub fn extern_package_dir(
        mut self,
        dir: impl Into<PathBuf>,
        module: impl Into<String>,
    ) -> Self {
        self.extern_packages.push((dir.into(), module.into()));
        self
    }

    /// Searches `prefix` (an install prefix holding `share/<pkg>/msg`, …) before
    /// `AMENT_PREFIX_PATH`, for [`ament_package`](Self::ament_package) and dependencies.
    pub fn ament_prefix(mut self, prefix: impl Into<PathBuf>) -> Self {
        self.prefixes.push(prefix.into());
        self
    }

    /// Whether packages that are referenced but neither given nor shipped are looked up in
    /// `AMENT_PREFIX_PATH` and generated too (default: yes).
    pub fn search_ament_prefix_path(mut self, yes: bool) -> Self {
        self.search_ament = yes;
        self
    }

    /// Where to write the code (default: `$OUT_DIR/rclev_interfaces.rs`).
    pub fn output(mut self, path: impl Into<PathBuf>) -> Self {
        self.output = Some(path.into());
        self
    }

    /// The path generated code names rclev by (default `::rclev`), for a crate that depends
    /// on rclev under another name; its `msg` and `interfaces` modules are used.
    pub fn rclev_path(mut self, path: impl Into<String>) -> Self {
        self.rclev = path.into().trim_end_matches("::").to_string();
        self
    }

    /// rclev's own build: generate the shipped packages themselves, for `crate::msg`.
    #[doc(hidden)]
    pub fn rclev_itself(mut self) -> Self {
        self.bundled_local = true;
        self.rclev = "crate".into();
        self
    }

    /// Parses, resolves and generates; returns the code without writing it.
    pub fn generate_string(&self) -> Result<Generated> {
        let bundled = bundled_packages()?;
        let mut provided: BTreeSet<String> = bundled.iter().map(|p| p.name.clone()).collect();
        let mut externs: Vec<(Package, &String)> = Vec::new();
        for (dir, module) in &self.extern_packages {
            let p = load_package_dir(dir)?;
            if !provided.insert(p.name.clone()) {
                return Err(Error::in_file(
                    dir,
                    format!("package '{}' is given twice (or ships with rclev)", p.name),
                ));
            }
            externs.push((p, module));
        }
        let bundled_names: BTreeSet<String> = bundled.iter().map(|p| p.name.clone()).collect();
        let mut local: Vec<Package> = Vec::new();
        for dir in &self.dirs {
            let p = load_package_dir(dir)?;
            if externs.iter().any(|(e, _)| e.name == p.name) {
                return Err(Error::in_file(
                    dir,
                    format!("package '{}' is also given as extern_package_dir", p.name),
                ));
            }
            if bundled_names.contains(&p.name) {
                return Err(Error::in_file(
                    dir,
                    format!(
                        "package '{}' ships with rclev: use rclev::interfaces::{} instead of generating it again",
                        p.name, p.name
                    ),
                ));
            }
            if local.iter().any(|q| q.name == p.name) {
                return Err(Error::in_file(
                    dir,
                    format!("package '{}' is given twice", p.name),
                ));
            }
            local.push(p);
        }
        let mut wanted: Vec<String> = self.ament_packages.clone();
        let mut searched = BTreeSet::new();
        loop {
            if self.search_ament {
                wanted.extend(missing_packages(&local, &provided));
            }
            let mut added = false;
            for name in std::mem::take(&mut wanted) {
                if provided.contains(&name)
                    || local.iter().any(|p| p.name == name)
                    || !searched.insert(name.clone())
                {
                    continue;
                }
                match find_in_prefixes(&name, &self.prefixes) {
                    Some(dir) => {
                        local.push(load_package_dir(&dir)?);
                        added = true;
                    }
                    None if self.ament_packages.contains(&name) => {
                        let searched: Vec<String> = self
                            .prefixes
                            .iter()
                            .map(|p| p.display().to_string())
                            .chain(std::env::var("AMENT_PREFIX_PATH").ok())
                            .collect();
                        return Err(Error::in_file(
                            Path::new(&name),
                            format!(
                                "interface package '{name}' not found: no <prefix>/share/{name} with msg/, srv/ or action/ under the ament_prefix() prefixes or AMENT_PREFIX_PATH (searched: {})",
                                if searched.is_empty() {
                                    "nothing; AMENT_PREFIX_PATH is not set: source a ROS 2 workspace".to_string()
                                } else {
                                    searched.join(":")
                                }
                            ),
                        ));
                    }
                    // Reported by resolution, with the line that references it.
                    None => {}
                }
            }
            if !added {
                break;
            }
        }
        let mut all: Vec<&Package> = bundled.iter().collect();
        all.extend(externs.iter().map(|(p, _)| p));
        all.extend(local.iter());
        let set = TypeSet::build(&all)?;
        let emitted: Vec<&Package> = if self.bundled_local {
            bundled.iter().collect()
        } else {
            local.iter().collect()
        };
        let mut external = BTreeMap::new();
        if !self.bundled_local {
            for name in &bundled_names {
                external.insert(name.clone(), format!("{}::interfaces::{name}", self.rclev));
            }
        }
        for (p, module) in &externs {
            external.insert(p.name.clone(), module.trim_end_matches("::").to_string());
        }
        let paths = emit::Paths {
            runtime: format!("{}::msg", self.rclev),
            external,
        };
        let services: Vec<TypeName> = all
            .iter()
            .flat_map(|p| p.services.iter().map(|s| s.name.clone()))
            .collect();
        let actions: Vec<TypeName> = all
            .iter()
            .flat_map(|p| p.actions.iter().map(|a| a.name.clone()))
            .collect();
        let code = emit::Emitter::new(&set, &paths, &services, &actions).emit(&emitted);
        let emitted_names: BTreeSet<&str> = emitted.iter().map(|p| p.name.as_str()).collect();
        // Extern packages count too: the hashes of local types that reference them are
        // written into the code, so a change to them must regenerate it.
        let sources = set
            .types
            .values()
            .filter(|m| {
                let package = m.name.package.as_str();
                emitted_names.contains(package) || externs.iter().any(|(e, _)| e.name == package)
            })
            .map(|m| m.source.clone())
            .collect();
        Ok(Generated {
            code,
            sources,
            packages: emitted_names.iter().map(|s| s.to_string()).collect(),
        })
    }

    /// Generates and writes the code; under Cargo, also tells Cargo when to run again.
    pub fn generate(&self) -> Result<Generated> {
        let generated = self.generate_string()?;
        let output = match &self.output {
            Some(p) => p.clone(),
            None => {
                let out_dir = std::env::var_os("OUT_DIR").ok_or_else(|| {
                    Error::in_file(
                        Path::new(OUTPUT_FILE),
                        "OUT_DIR is not set: call generate() from build.rs, or set output()",
                    )
                })?;
                PathBuf::from(out_dir).join(OUTPUT_FILE)
            }
        };
        if std::env::var_os("CARGO").is_some() && std::env::var_os("OUT_DIR").is_some() {
            let extern_dirs = self.extern_packages.iter().map(|(dir, _)| dir);
            for dir in self.dirs.iter().chain(extern_dirs) {
                println!("cargo:rerun-if-changed={}", dir.display());
            }
            for s in &generated.sources {
                println!("cargo:rerun-if-changed={}", s.display());
            }
            println!("cargo:rerun-if-env-changed=AMENT_PREFIX_PATH");
        }
        // Writing only on change keeps Cargo from recompiling the crate for nothing.
        if std::fs::read_to_string(&output).ok().as_deref() != Some(generated.code.as_str()) {
            std::fs::write(&output, &generated.code)
                .map_err(|e| Error::in_file(&output, format!("cannot write: {e}")))?;
        }
        Ok(generated)
    }
}

/// Packages that `local` references and nobody provides yet.
fn missing_packages(local: &[Package], bundled: &BTreeSet<String>) -> Vec<String> {
    let have: BTreeSet<&str> = local.iter().map(|p| p.name.as_str()).collect();
    let mut out = BTreeSet::new();
    let mut note = |m: &model::Message| {
        for f in &m.fields {
            if let model::BaseType::Nested(t) = &f.ty.base {
                if !have.contains(t.package.as_str()) && !bundled.contains(&t.package) {
                    out.insert(t.package.clone());
                }
            }
        }
    };
    for p in local {
        p.messages.iter().for_each(&mut note);
        for s in &p.services {
            note(&s.request);
            note(&s.response);
        }
        for a in &p.actions {
            note(&a.goal);
            note(&a.result);
            note(&a.feedback);
        }
    }
    out.into_iter().collect()
}

/// What [`Builder::generate`] produced.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The Rust code.
    pub code: String,
    /// The definition files it was generated from, and those of the extern packages it
    /// references.
    pub sources: BTreeSet<PathBuf>,
    /// The packages generated.
    pub packages: Vec<String>,
}
