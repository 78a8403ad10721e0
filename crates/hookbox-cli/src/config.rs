//! `hookbox.toml` for the commands: [`hookbox_runtime::Config`] under the name the commands
//! use, and the warning a risky setting earns on a terminal.

use std::path::Path;

use hookbox_runtime::Config;

/// The whole file (kept under this name for the commands that read it directly).
pub(crate) type ConfigFile = Config;

/// Reads `explicit`, else `<home>/hookbox.toml` when it exists, else the defaults.
pub(crate) fn read(explicit: Option<&Path>, home: &Path) -> anyhow::Result<ConfigFile> {
    Config::read(explicit, home)
}

/// Prints a loud warning when `config` lets HTTP hooks reach loopback receivers.
pub(crate) fn warn_if_loopback_hooks(config: &Config) {
    if config.network.permit_loopback_hooks {
        crate::render::print_error(
            "WARNING: hookbox.toml sets `[network] permit_loopback_hooks = true`: HTTP hooks \
             may reach services on this host's loopback interface (127.0.0.0/8, ::1). Only \
             use this for a self-hosted hook receiver you trust.\n",
        );
    }
}
