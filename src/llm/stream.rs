//! placeholder (helper A)
