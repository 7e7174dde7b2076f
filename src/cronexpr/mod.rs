//! The schedule engine: parsing the cron dialect, next/previous fire times in
//! UTC, local time and IANA zones, hashed fields and linting. Pure: no I/O
//! and no clock; "now" is always an argument.
