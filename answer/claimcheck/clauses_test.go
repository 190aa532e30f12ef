package claimcheck_test

import "testing"

const (
	conflictEN = "If there is a file conflict, the local will overwrite the cloud, and the conflicting files from the cloud will be generated in the data history."
	conflictRU = "При конфликте файлов локальная версия перезаписывает облачную, а конфликтующие файлы из облака попадают в историю данных."
)

func TestClausesEnglish(t *testing.T) {
	runCases(t, []checkCase{
		{"a verbatim copy passes", conflictEN, conflictEN, false, nil},
		{"a reordered paraphrase of both clauses passes",
			"On a file conflict, the local copy overwrites the cloud, and the cloud's conflicting files go into the data history.", conflictEN, false, nil},
		{"an invented clause after a copied one fails",
			"If there is a file conflict, the local will overwrite the cloud, and it also syncs to a server in Peru.", conflictEN, false,
			[]string{missing("name", "Peru"), missing("clause", "it also syncs to a server in Peru")}},
		{"an invented clause with which fails",
			"The local will overwrite the cloud on a file conflict, which deletes the remote account permanently.", conflictEN, false,
			[]string{missing("clause", "which deletes the remote account permanently")}},
		{"an invented clause after a semicolon fails",
			"The local will overwrite the cloud on a file conflict; administrators receive an email alert.", conflictEN, false,
			[]string{missing("clause", "administrators receive an email alert")}},
		{"an invented clause after but fails",
			"The local will overwrite the cloud on a file conflict, but remote edits are merged automatically.", conflictEN, false,
			[]string{missing("clause", "remote edits are merged automatically")}},
		{"a one-word clause must be in the block", "The local will overwrite the cloud on a file conflict, which is rare.", conflictEN, false,
			[]string{missing("clause", "which is rare")}},
		{"a clause in parentheses is judged", "The local will overwrite the cloud (a remote backup is kept for audits).", conflictEN, false,
			[]string{missing("clause", "a remote backup is kept for audits")}},
		{"a single clause is left to the verifier", "The local copy wins over remote edits.", conflictEN, false, nil},
		{"a clause made of numbers and fillers states nothing more", "The local will overwrite the cloud on a file conflict, and yes, also.", conflictEN, false, nil},
	})
}

func TestClausesRussian(t *testing.T) {
	runCases(t, []checkCase{
		{"a verbatim copy passes", conflictRU, conflictRU, false, nil},
		{"a paraphrase with other inflections passes",
			"При конфликте файлов облачная версия перезаписывается локальной, а конфликтующие файлы облака попадут в историю данных.", conflictRU, false, nil},
		{"an invented clause after а fails",
			"При конфликте файлов локальная версия перезаписывает облачную, а администратор получает письмо.", conflictRU, false,
			[]string{missing("clause", "администратор получает письмо")}},
		{"an invented clause after который fails",
			"При конфликте файлов локальная версия перезаписывает облачную, которая удаляется навсегда.", conflictRU, false,
			[]string{missing("clause", "которая удаляется навсегда")}},
		{"an invented condition after если fails",
			"Локальная версия перезаписывает облачную при конфликте файлов, если включено шифрование.", conflictRU, false,
			[]string{missing("clause", "если включено шифрование")}},
		{"an invented clause after но fails",
			"Локальная версия перезаписывает облачную при конфликте, но удалённые правки объединяются автоматически.", conflictRU, false,
			[]string{missing("clause", "удалённые правки объединяются автоматически")}},
		{"clauses are not judged across languages",
			"При конфликте файлов локальная версия перезаписывает облачную, а конфликтующие файлы из облака попадают в историю данных.", conflictEN, true, nil},
	})
}

func TestFillers(t *testing.T) {
	runCases(t, []checkCase{
		{"en: according to the notes is no clause and no name",
			"According to the notes, the local will overwrite the cloud on a file conflict, and the conflicting files go into the data history.", conflictEN, false, nil},
		{"en: the guide says is no clause",
			"The SiYuan User Guide says that the local will overwrite the cloud on a file conflict, and conflicting files go into the data history.", conflictEN, false, nil},
		{"en: a trailing source phrase is no clause",
			"The local will overwrite the cloud on a file conflict, and conflicting files go into the data history, according to the guide.", conflictEN, false, nil},
		{"en: a filler does not hide a changed number",
			"According to the notes, history from the last 31 days is saved.", historyEN, false, []string{missing("quantity", "31 days")}},
		{"ru: в заметках сказано is no clause",
			"В заметках сказано: при конфликте файлов локальная версия перезаписывает облачную, а конфликтующие файлы попадают в историю данных.", conflictRU, false, nil},
		{"ru: согласно заметкам is no clause",
			"Согласно заметкам, при конфликте файлов локальная версия перезаписывает облачную, а конфликтующие файлы попадают в историю данных.", conflictRU, false, nil},
		{"ru: в руководстве говорится, что is no clause",
			"В руководстве говорится, что при конфликте файлов локальная версия перезаписывает облачную, а конфликтующие файлы попадают в историю данных.", conflictRU, false, nil},
		{"ru: a trailing source phrase is no clause",
			"При конфликте файлов локальная версия перезаписывает облачную, а конфликтующие файлы попадают в историю данных, как сказано в заметках.", conflictRU, false, nil},
		{"ru: a filler does not hide a changed number",
			"Согласно заметкам, история файлов за последние 31 день сохраняется автоматически.", historyRU, false, []string{missing("quantity", "31 день")}},
	})
}
