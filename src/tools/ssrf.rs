//! placeholder (helper D)
