package config

// DecodeConfigItemWithSessions is DecodeConfigItem without its refusal of
// session quotas, for the golden tests of their stored form: they come back
// among the limits, and session is the refusal DecodeConfigItem would add.
func DecodeConfigItemWithSessions(level Level, item item) (Decoded, *UnsupportedConfigError, error) {
	return decodeConfigItem(level, item)
}
