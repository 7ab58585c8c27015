//! The Docker Engine: to be written.
