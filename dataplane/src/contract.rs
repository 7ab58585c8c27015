//! The container contract (contract section 12): to be written.
