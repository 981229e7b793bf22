//! The embedded Lua 5.1 that runs script bodies with no native twin; here, the libraries it loads.

pub(crate) mod libs;
