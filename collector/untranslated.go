package collector

// Untranslated is how every surface (pages, tools, alert summaries) says
// that an alarm or name has no translation: "no translation in en" for the
// catalog's language, or, with no catalog in use (switched off or not read
// yet), "not translated: no parameter catalog in use".
func Untranslated(language string) string {
	if language == "" {
		return "not translated: no parameter catalog in use"
	}
	return "no translation in " + language
}
