//! A replica's lines to the logs: to be written.
