//! With the `dds` feature, the binary finds the Fast DDS libraries rclev-dds linked at run
//! time: rclev-dds (`links = "fastrtps"`) hands their directories over as DEP_FASTRTPS_LIBDIRS.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FASTRTPS_LIBDIRS");
    if let Ok(dirs) = std::env::var("DEP_FASTRTPS_LIBDIRS") {
        for dir in dirs.split(':').filter(|d| !d.is_empty()) {
            // RPATH rather than RUNPATH: it also serves libfastrtps's own dependencies.
            println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags,-rpath,{dir}");
        }
    }
}
