package claimcheck_test

import "testing"

const (
	ocrEN    = "This feature is only supported on the desktop, and the Tesseract OCR program needs to be manually installed first."
	ocrRU    = "Эта функция работает только на компьютере, а программу Tesseract OCR нужно сначала установить вручную."
	syncEN   = "Cloud sync is a paid feature, while local backups are free."
	syncRU   = "Облачная синхронизация — платная функция, а локальные резервные копии бесплатны."
	relation = "Configuration: When creating, you must select the target database for the relation"
)

func TestLimitersEnglish(t *testing.T) {
	runCases(t, []checkCase{
		{"a copied limiter passes", "This feature is supported only on the desktop.", ocrEN, false, nil},
		{"a condition appended fails", "Local backups are free, but only in the paid edition.", "Local backups are free.", false,
			[]string{missing("limiter", "only"), missing("limiter", "paid"), missing("clause", "only in the paid edition")}},
		{"free with free passes", "Local backups are free.", syncEN, false, nil},
		{"paid with paid passes", "Cloud sync is a paid feature.", syncEN, false, nil},
		{"paid is stated by a subscription", "Cloud sync is a paid feature.", "Cloud sync requires a subscription.", false, nil},
		{"free where the block says paid fails", "Cloud sync is a free feature.", "Cloud sync is a paid feature.", false,
			[]string{missing("limiter", "free")}},
		{"must is stated by needs to", "The Tesseract OCR program must be installed manually first.", ocrEN, false, nil},
		{"must added fails", "You must select the target database before saving.", "Select the target database before saving.", false,
			[]string{missing("limiter", "must")}},
		{"needs in a claim is not required of the block", "You need to select the target database when creating a relation.", relation, false, nil},
		{"always added fails", "The Tesseract OCR program is always installed manually.", ocrEN, false,
			[]string{missing("limiter", "always")}},
		{"never added fails", "The desktop feature never needs Tesseract OCR.", ocrEN, false,
			[]string{missing("limiter", "never")}},
		{"all added fails", "All features are supported on the desktop.", ocrEN, false,
			[]string{missing("limiter", "All")}},
		{"every is stated by all", "Every device needs the same passphrase.", "Generate the key from a passphrase, which requires the same passphrase on all devices", false, nil},
		{"except added fails", "This feature is supported on the desktop, except Linux.", ocrEN, false,
			[]string{missing("name", "Linux"), missing("limiter", "except"), missing("clause", "except Linux")}},
		{"unless added fails", "Tesseract OCR needs to be installed first unless it is bundled.", ocrEN, false,
			[]string{missing("limiter", "unless"), missing("clause", "unless it is bundled")}},
		{"at least is stated by minimum", "Keep at least 3 copies.", "The 321 rule: minimum 3 copies, 2 media, and 1 offline storage.", false, nil},
		{"at most is stated by up to", "Snapshots are retained for at most 30 days.", "Snapshots are retained for up to 30 days.", false, nil},
		{"at most added fails", "At most 30 snapshots are retained.", "30 snapshots are retained.", false,
			[]string{missing("limiter", "At most")}},
		{"not only limits nothing", "The feature not only runs on the desktop but needs Tesseract OCR.", ocrEN, false, nil},
		{"feel free limits nothing", "Feel free to install the Tesseract OCR program manually.", ocrEN, false, nil},
	})
}

func TestLimitersRussian(t *testing.T) {
	runCases(t, []checkCase{
		{"a copied limiter passes", "Эта функция работает только на компьютере.", ocrRU, false, nil},
		{"a condition appended fails", "Локальные резервные копии бесплатны, но только в платной версии.", "Локальные резервные копии бесплатны.", false,
			[]string{missing("limiter", "только"), missing("limiter", "платной"), missing("clause", "только в платной версии")}},
		{"free in another form passes", "Локальное резервное копирование бесплатное.", syncRU, false, nil},
		{"paid in another case passes", "Облачная синхронизация относится к платным функциям.", syncRU, false, nil},
		{"a Russian limiter is stated by an English block", "Облачная синхронизация — платная функция.", syncEN, true, nil},
		{"a Russian limiter not in an English block fails", "Облачная синхронизация бесплатна.", "Cloud sync is a paid feature.", true,
			[]string{missing("limiter", "бесплатна")}},
		{"must is stated by нужно", "Программу Tesseract OCR обязательно нужно установить вручную.", ocrRU, false, nil},
		{"должен is stated by English must", "При создании связи пользователь должен выбрать целевую базу данных.", relation, true, nil},
		{"должен added fails", "Пользователь должен выбрать базу данных.", "Пользователь выбирает базу данных.", false,
			[]string{missing("limiter", "должен")}},
		{"всегда added fails", "Программа Tesseract OCR всегда устанавливается вручную.", ocrRU, false,
			[]string{missing("limiter", "всегда")}},
		{"все added fails", "Все функции работают на компьютере.", ocrRU, false, []string{missing("limiter", "Все")}},
		{"каждый is stated by English all", "На каждом устройстве нужна одна и та же фраза.", "The key requires the same passphrase on all devices", true, nil},
		{"кроме added fails", "Функция работает на компьютере, кроме Linux.", ocrRU, false,
			[]string{missing("name", "Linux"), missing("limiter", "кроме"), missing("clause", "кроме Linux")}},
		{"не менее is stated by minimum", "Храните не менее 3 копий.", "The 321 rule: minimum 3 copies, 2 media, and 1 offline storage.", true, nil},
		{"не более added fails", "Хранится не более 30 снимков.", "Хранится 30 снимков.", false, []string{missing("limiter", "не более")}},
		{"не только limits nothing", "Функция не только работает на компьютере, но и требует Tesseract OCR.", ocrRU, false, nil},
		{"кроме того limits nothing", "Кроме того, программу Tesseract OCR нужно установить вручную.", ocrRU, false, nil},
		{"всё ещё limits nothing", "Программу Tesseract OCR всё ещё нужно установить вручную.", ocrRU, false, nil},
	})
}
