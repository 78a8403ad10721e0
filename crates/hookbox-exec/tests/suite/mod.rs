//! The test modules, one per concern.

mod basics;
mod cancel;
mod cpu;
mod directory;
mod disk;
mod groups;
mod interactive;
mod keeper;
mod leaks;
mod listen;
mod output;
mod parent_death;
mod residue;
mod sandbox;
mod sockets;
mod support;
mod timeout;
mod warm;
mod warm_footprint;
mod warm_lifetime;
mod zygote;
