//! The reconciler: to be written.
