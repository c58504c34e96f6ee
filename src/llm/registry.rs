//! placeholder (helper C)
