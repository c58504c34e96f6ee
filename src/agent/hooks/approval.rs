//! placeholder (helper E)
