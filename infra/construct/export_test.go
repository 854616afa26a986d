package construct

// Internals the tests of package construct_test call.
var (
	CheckGoVersion   = checkGoVersion
	ReadBuildVersion = readBuildVersion
	GoDirectiveOf    = goDirectiveOf
)

// GoDirective is the go directive the construct names without a go command.
const GoDirective = goDirective
