// Package capability holds the capabilities that open the storage writers
// of core to the code that must use them, and to nobody else. Only code
// under core/ can import this package, so only it can spell a capability;
// a method that asks for one is, in effect, internal to core. The pattern
// is protobuf-go's internal pragma types.
package capability

// ConfigWrite opens config.Store.Writer: the writes of config items,
// entities and namespaces. core/control (the operator API, which audits
// every change and brings stamped buckets in line, docs/design.md §8) and
// core/provision (the declarative apply, §12) hold it; every other writer
// goes through core/control. Its zero value is the capability.
type ConfigWrite struct{ _ [0]func() }
