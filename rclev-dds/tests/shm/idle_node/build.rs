//! The Fast DDS library directories that rclev-dds linked (DEP_FASTRTPS_LIBDIRS) go into this
//! binary's run path, as rclev-dds does for its own examples.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FASTRTPS_LIBDIRS");
    if let Ok(dirs) = std::env::var("DEP_FASTRTPS_LIBDIRS") {
        for dir in dirs.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags,-rpath,{dir}");
        }
    }
}
