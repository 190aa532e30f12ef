package claimcheck_test

import (
	"testing"

	"github.com/exocortex/exocortex/answer/claimcheck"
)

const (
	storesEN = "SiYuan stores all data locally in the workspace folder, and iCloud is not used."
	storesRU = "SiYuan хранит данные локально в папке рабочего пространства, сервер находится в Москве."
	s3EN     = "S3-compatible object storage services: such as Qiniu Cloud, Alibaba Cloud OSS, Cloudflare R2, etc."
)

func TestNamesEnglish(t *testing.T) {
	runCases(t, []checkCase{
		{"a copied name passes", "SiYuan stores data locally in the workspace folder.", storesEN, false, nil},
		{"a possessive name passes", "SiYuan's data is stored locally in the workspace folder.", storesEN, false, nil},
		{"a name swapped at the sentence start fails", "Obsidian stores data locally in the workspace folder.", storesEN, false,
			[]string{missing("name", "Obsidian")}},
		{"a mixed-case name swapped fails", "SiYuan stores data locally, and OneDrive is not used.", storesEN, false,
			[]string{missing("name", "OneDrive"), missing("clause", "OneDrive is not used")}},
		{"a capitalised name inside the sentence swapped fails", "Object storage such as Qiniu Cloud or Backblaze is supported.", s3EN, false,
			[]string{missing("name", "Backblaze")}},
		{"an acronym swapped fails", "Alibaba Cloud COS is an S3-compatible service.", s3EN, false,
			[]string{missing("name", "COS")}},
		{"names in any case pass", "S3-compatible services such as qiniu cloud and ALIBABA CLOUD OSS are supported.", s3EN, false, nil},
		{"a common word opening the sentence is no name", "Users can keep data in the workspace folder with SiYuan.", storesEN, false, nil},
		{"an article opening the sentence is no name", "The workspace folder holds all data of SiYuan.", storesEN, false, nil},
		{"a quoted label must be in the block", `Turn off the "Enable cloud sync" option to pause sync.`,
			"If you need to pause sync, you can turn off the option Settings - Account & Sync - Enable cloud sync", false, nil},
		{"a quoted label changed fails", `Turn off the "Disable cloud sync" option to pause sync.`,
			"If you need to pause sync, you can turn off the option Settings - Account & Sync - Enable cloud sync", false,
			[]string{missing("name", "Disable")}},
		{"a path changed fails", "To clear all data snapshots, delete the workspace/history/ folder manually.",
			"Manually delete the `workspace/repo/` folder to clear all data snapshots", false, []string{missing("name", "history")}},
		{"a flag changed fails", "With --tls=true, serving uses the https and wss protocols.",
			"After using `--ssl=true`, https and wss protocols will be used for serving.", false, []string{missing("name", "tls")}},
		{"a file extension changed fails", "Template snippets are .txt files in the data/templates folder.",
			"Template snippets use `.md` suffix files and are stored in the data/templates folder of the workspace.", false,
			[]string{missing("name", "txt")}},
		{"a short name begins a longer word of the block", "Sync can be paused in Settings.", "Synchronization can be paused in Settings.", false, nil},
	})
}

func TestNamesRussian(t *testing.T) {
	runCases(t, []checkCase{
		{"a declined name matches by its stem", "Сервер находится в Москва-Сити, то есть в Москве.", "Сервер стоит в Москве.", false,
			[]string{missing("name", "Сити")}},
		{"a name in another case passes", "Сервер находится в городе Москва.", storesRU, false, nil},
		{"a Cyrillic name swapped fails", "Сервер находится в Петербурге.", storesRU, false, []string{missing("name", "Петербурге")}},
		{"a name swapped at the sentence start fails across the verb's gender", "Борис утвердил бюджет проекта.", "Анна утвердила бюджет проекта на встрече.", false,
			[]string{missing("name", "Борис")}},
		{"the same name at the sentence start passes", "Анна утвердила бюджет проекта.", "Анна утвердила бюджет проекта на встрече.", false, nil},
		{"a Latin name in a Russian claim must be in the block", "Obsidian хранит данные локально в папке рабочего пространства.", storesRU, false,
			[]string{missing("name", "Obsidian")}},
		{"a Latin name copied passes", "SiYuan хранит данные в папке рабочего пространства локально.", storesRU, false, nil},
		{"a Latin word in a Russian claim is a name", "Данные хранятся в папке workspace/data.", "Данные лежат в папке workspace/data.", false, nil},
		{"a Latin word changed in a Russian claim fails", "Данные хранятся в папке workspace/assets.", "Данные лежат в папке workspace/data.", false,
			[]string{missing("name", "assets")}},
		{"a Latin name over an English note must be in it", "Объектные хранилища, например Backblaze B2, поддерживаются.", s3EN, true,
			[]string{missing("name", "B2"), missing("name", "Backblaze")}},
		{"a Latin name over an English note passes when it is there", "Поддерживаются S3-совместимые хранилища, например Cloudflare R2 и Qiniu Cloud.", s3EN, true, nil},
		{"a Cyrillic name over an English note is not required", "Сервер SiYuan находится в Москве.", "The SiYuan server is in Moscow.", true, nil},
		{"a quoted Cyrillic label must be in a Russian block", "Выключите параметр «Включить облачную синхронизацию».",
			"Чтобы приостановить синхронизацию, выключите параметр «Включить облачную синхронизацию».", false, nil},
		{"a quoted Cyrillic label changed fails", "Выключите параметр «Отключить облачную синхронизацию».",
			"Чтобы приостановить синхронизацию, выключите параметр «Включить облачную синхронизацию».", false,
			[]string{missing("name", "Отключить")}},
	})
}

func TestASwappedNameAtTheStartIsCaughtWhateverOtherNamesTheClaimShares(t *testing.T) {
	block := "SiYuan does not enable all installed language packs, so by default only `eng` and `rus` are enabled; set `SIYUAN_TESSERACT_LANGS` for more."
	for _, tc := range []struct {
		name, claim, evidence string
		bad                   bool
	}{
		{"a swapped name before a shared identifier holding the original", "Obsidian does not enable all installed language packs; set `SIYUAN_TESSERACT_LANGS` for more.", block, true},
		{"the original name passes", "SiYuan does not enable all installed language packs; set `SIYUAN_TESSERACT_LANGS` for more.", block, false},
		{"a heading label swapped", "#Obsidian: The formatting of Go is quite special.", "#Note: The formatting of Go is quite special: use 2006-01-02.", true},
		{"a common opener is no name", "Templates use a fixed time format.", "The templates use a fixed time format: 2006-01-02.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := claimcheck.Check(nil, tc.claim, tc.evidence, claimcheck.Options{})
			if (len(got) > 0) != tc.bad {
				t.Errorf("problems %v, want bad %v", got, tc.bad)
			}
		})
	}
}
