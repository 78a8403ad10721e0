//! The warning a risky `hookbox.toml` setting earns on a terminal (the file itself is
//! [`hookbox_runtime::Config`]).

use hookbox_runtime::Config;

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
