//! An in-process Redis simulator on one virtual clock (being built; see the README).
//!
//! [`resp`] is its wire protocol: Redis 7.0's request parser and reply encoder, byte for byte.

pub mod resp;
