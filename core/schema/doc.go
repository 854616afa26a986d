// Package schema is the limiter's one DynamoDB table as data: the table and
// index definition, every key builder and parser of the record catalogue,
// attribute names, and the validation of identifiers and limit names
// (docs/design.md §2).
//
// Comments cite the Python project's decision records as ADR-n;
// docs/compatibility.md summarises each one.
package schema
