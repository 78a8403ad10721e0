//! hookbox-net's integration tests: the guarded client against real local HTTP servers.

mod suite;
