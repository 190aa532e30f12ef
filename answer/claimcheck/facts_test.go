package claimcheck_test

import (
	"testing"

	"github.com/exocortex/exocortex/answer/claimcheck"
)

const (
	historyEN = "By default, the history of files generated in the last 30 days is automatically saved, which can be adjusted through Settings - Documents - History Retention Days."
	historyRU = "По умолчанию автоматически сохраняется история файлов за последние 30 дней; срок меняется в настройках документов."
	limitEN   = "If LIMIT is not specified, only the first 64 results will be returned at most."
	limitRU   = "Если LIMIT не указан, возвращаются только первые 64 результата."
	timingEN  = "The performance monitoring threshold is set in milliseconds, and the default is 15000, which is 15 seconds."
)

func TestNumbersEnglish(t *testing.T) {
	runCases(t, []checkCase{
		{"a copied number passes", "File history from the last 30 days is saved automatically.", historyEN, false, nil},
		{"one number changed fails", "File history from the last 97 days is saved automatically.", historyEN, false,
			[]string{missing("quantity", "97 days")}},
		{"a bare number changed fails", "If LIMIT is not specified, only the first 65 results are returned.", limitEN, false,
			[]string{missing("number", "65")}},
		{"a number written as a word matches its digits", "Only the first sixty-four results are returned when LIMIT is not specified.", limitEN, false, nil},
		{"digits match a number written as a word", "History from the last 30 days is kept.", "History from the last thirty days is kept.", false, nil},
		{"a number word changed fails", "History from the last thirty-one days is kept.", "History from the last 30 days is kept.", false,
			[]string{missing("quantity", "thirty-one days")}},
		{"a thousands comma matches plain digits", "The default threshold is 15,000.", timingEN, false, nil},
		{"a thousands space matches plain digits", "The default threshold is 15 000.", timingEN, false, nil},
		{"plain digits match a thousands comma", "The default threshold is 15000.", "The default threshold is 15,000.", false, nil},
		{"a thousand written as a word matches digits", "The default threshold is fifteen thousand.", timingEN, false, nil},
		{"a year changed fails", "The guide was updated in 2428.", "The guide was updated in 2024.", false,
			[]string{missing("number", "2428")}},
		{"the numbers of citation markers and block ids are not claims",
			"The default threshold is 15000 [1] [20210808180117-6v0mkxr].", timingEN, false, nil},
		{"the numbers of a link are not claims", "The default is 15000, see https://b3log.org/siyuan/en/2024/05/guide.html.", timingEN, false, nil},
		{"a list marker is not a claim", "3. The default threshold is 15000.", timingEN, false, nil},
		{"the word one states no count", "One of the settings is the threshold, 15000 by default.", timingEN, false, nil},
		{"a number in an identifier is a name, not a number", "Cloudflare R2 is supported.", "S3 services such as Cloudflare R2 are supported.", false, nil},
		{"an identifier changed fails", "Backblaze B2 is supported.", "S3 services such as Cloudflare R2 are supported.", false,
			[]string{missing("name", "B2"), missing("name", "Backblaze")}},
	})
}

func TestNumbersRussian(t *testing.T) {
	runCases(t, []checkCase{
		{"a copied number passes", "История файлов за последние 30 дней сохраняется автоматически.", historyRU, false, nil},
		{"one number changed fails", "История файлов за последние 97 дней сохраняется автоматически.", historyRU, false,
			[]string{missing("quantity", "97 дней")}},
		{"a bare number changed fails", "Если LIMIT не указан, возвращаются только первые 46 результатов.", limitRU, false,
			[]string{missing("number", "46")}},
		{"a number word in any case matches its digits", "История хранится тридцать дней.", historyRU, false, nil},
		{"a number word in the genitive matches digits", "История хранится не дольше тридцати дней.", historyRU, false, nil},
		{"a compound number word matches its digits", "Возвращаются только первые шестьдесят четыре результата.", limitRU, false, nil},
		{"a number word changed fails", "История хранится сорок дней.", historyRU, false,
			[]string{missing("quantity", "сорок дней")}},
		{"a Russian claim's number is checked over an English note", "История файлов за последние 90 дней сохраняется автоматически.", historyEN, true,
			[]string{missing("quantity", "90 дней")}},
		{"a Russian number word matches English digits", "Сохраняется история за тридцать дней.", historyEN, true, nil},
		{"thousands with a space match a comma", "Порог по умолчанию равен 15 000 миллисекунд.", "The default threshold is 15,000 milliseconds.", true, nil},
		{"thousands in words match digits", "Порог по умолчанию — пятнадцать тысяч.", timingEN, true, nil},
		{"a year with its word changed fails", "Руководство обновлено в 2428 году.", "Руководство обновлено в 2024 году.", false,
			[]string{missing("date", "2428 году")}},
		{"a number with a case ending matches its digits", "Откройте PDF на 7-й странице.", "To jump to page 7 of the PDF, edit the link.", true, nil},
	})
}

func TestDates(t *testing.T) {
	const isoEN = "Version 3.1 was released on 2024-05-15."
	const ruNote = "Версия 3.1 вышла 15 мая 2024 года."
	runCases(t, []checkCase{
		{"en: a day month year date matches an ISO date", "Version 3.1 was released on 15 May 2024.", isoEN, false, nil},
		{"en: a month day year date matches an ISO date", "Version 3.1 was released on May 15, 2024.", isoEN, false, nil},
		{"en: a dotted date matches an ISO date", "Version 3.1 was released on 15.05.2024.", isoEN, false, nil},
		{"en: an ISO date matches a written one", "Version 3.1 was released on 2024-05-15.", "Version 3.1 was released on May 15th, 2024.", false, nil},
		{"en: a date without its year matches a full date", "Version 3.1 was released on May 15.", isoEN, false, nil},
		{"en: a month and year match a full date", "Version 3.1 was released in May 2024.", isoEN, false, nil},
		{"en: the year alone matches a full date", "Version 3.1 was released in 2024.", isoEN, false, nil},
		{"en: a day changed fails", "Version 3.1 was released on 16 May 2024.", isoEN, false, []string{missing("date", "16 May 2024")}},
		{"en: a year changed fails", "Version 3.1 was released on May 15, 2025.", isoEN, false, []string{missing("date", "May 15, 2025")}},
		{"en: a month changed fails", "Version 3.1 was released in June 2024.", isoEN, false, []string{missing("date", "June 2024")}},
		{"en: an ISO date changed fails", "Version 3.1 was released on 2024-05-16.", isoEN, false, []string{missing("date", "2024-05-16")}},
		{"en: a full date is more than the block's date without a year", "Version 3.1 was released on 15 May 2024.",
			"Version 3.1 was released on 15 May.", false, []string{missing("date", "15 May 2024")}},
		{"ru: a Russian date matches an English note's ISO date", "Версия 3.1 вышла 15 мая 2024 года.", isoEN, true, nil},
		{"ru: a dotted date matches a Russian written date", "Версия 3.1 вышла 15.05.2024.", ruNote, false, nil},
		{"ru: a written date matches a dotted one", "Версия 3.1 вышла 15 мая 2024 г.", "Версия 3.1 вышла 15.05.2024.", false, nil},
		{"ru: a date without its year matches", "Версия 3.1 вышла 15 мая.", ruNote, false, nil},
		{"ru: a month in the prepositional case matches", "Версия 3.1 вышла в мае 2024 года.", ruNote, false, nil},
		{"ru: a day changed fails", "Версия 3.1 вышла 16 мая 2024 года.", ruNote, false, []string{missing("date", "16 мая 2024 года")}},
		{"ru: a month changed fails", "Версия 3.1 вышла в июне 2024 года.", ruNote, false, []string{missing("date", "июне 2024 года")}},
		{"ru: a year changed fails over an English note", "Версия 3.1 вышла 15 мая 2023 года.", isoEN, true, []string{missing("date", "15 мая 2023 года")}},
	})
}

func TestTimes(t *testing.T) {
	const backupEN = "The automatic backup runs every day at 02:00 and takes about 5 minutes."
	runCases(t, []checkCase{
		{"en: the same time passes", "The automatic backup runs daily at 02:00.", backupEN, false, nil},
		{"en: a time without its leading zero passes", "The automatic backup runs at 2:00 every day.", backupEN, false, nil},
		{"en: a 12-hour time matches the 24-hour clock", "The automatic backup runs at 2:00 AM every day.", backupEN, false, nil},
		{"en: minutes changed fail", "The automatic backup runs every day at 02:03.", backupEN, false, []string{missing("time", "02:03")}},
		{"en: PM is another time", "The automatic backup runs every day at 2 PM.", backupEN, false, []string{missing("time", "2 PM")}},
		{"en: 2 pm matches 14:00", "The sync runs at 2 pm.", "The sync runs at 14:00.", false, nil},
		{"ru: the same time over an English note passes", "Автоматическая резервная копия создаётся каждый день в 02:00.", backupEN, true, nil},
		{"ru: a changed time fails", "Резервная копия создаётся каждый день в 03:00.", "Резервная копия создаётся каждый день в 02:00.", false,
			[]string{missing("time", "03:00")}},
		{"ru: a time matches its 12-hour English form", "Синхронизация запускается в 14:30.", "Sync starts at 2:30 PM.", true, nil},
	})
}

func TestQuantities(t *testing.T) {
	const snapEN = "Data snapshots in cloud storage are retained for up to 30 days."
	const ocrEN = "By default, only images below 2MB are processed."
	const stepsEN = "If there is no data change, it will be incremented by 5 minutes, 8 minutes, 16 minutes, 32 minutes..."
	const snapRU = "Снимки данных в облаке хранятся до 30 дней."
	runCases(t, []checkCase{
		{"en: the same number in another unit fails", "Data snapshots in cloud storage are retained for up to 30 hours.", snapEN, false,
			[]string{missing("quantity", "30 hours")}},
		{"en: a unit's abbreviation matches its word", "The sync runs 30 sec after the last change.", "The sync runs 30 seconds after the last change.", false, nil},
		{"en: a hyphenated quantity matches", "Cloud storage keeps data snapshots in a 30-day window.", snapEN, false, nil},
		{"en: a unit written against the number matches a spaced one", "Only images smaller than 2 MB are processed by default.", ocrEN, false, nil},
		{"en: a size changed fails", "Only images smaller than 4 MB are processed by default.", ocrEN, false, []string{missing("quantity", "4 MB")}},
		{"en: a size's unit changed fails", "Only images smaller than 2 GB are processed by default.", ocrEN, false, []string{missing("quantity", "2 GB")}},
		{"en: numbers listed before their unit take it", "When data does not change, the interval grows by 5, 8, 16 and 32 minutes.", stepsEN, false, nil},
		{"en: a number the block lists takes the block's unit", "Without data changes it is incremented by 8 minutes.", stepsEN, false, nil},
		{"en: a number in the wrong unit fails even when the block names that unit", "The interval grows by 5 hours.", "The interval grows by 5 minutes and resets after an hour.", false,
			[]string{missing("quantity", "5 hours")}},
		{"ru: every form of a unit word is one unit", "Снимки хранятся до 30 дней.", "Снимки хранятся 30 дня.", false, nil},
		{"ru: the same number in another unit fails", "Снимки данных в облаке хранятся до 30 часов.", snapRU, false, []string{missing("quantity", "30 часов")}},
		{"ru: a Russian unit matches the English one", "Снимки данных в облачном хранилище хранятся до 30 дней.", snapEN, true, nil},
		{"ru: a Russian unit changed fails over an English note", "Снимки данных в облачном хранилище хранятся до 30 недель.", snapEN, true,
			[]string{missing("quantity", "30 недель")}},
		{"ru: a size in Russian letters matches", "По умолчанию обрабатываются только изображения меньше 2 МБ.", ocrEN, true, nil},
		{"ru: a count of seconds matches", "Порог по умолчанию — 15 секунд.", timingEN, true, nil},
	})
}

func TestPercentMoneyVersion(t *testing.T) {
	const priceEN = "The annual subscription costs $64, a 50% discount applies to students, and SiYuan v3.1 added it."
	const priceRU = "Годовая подписка стоит 64 доллара, студентам скидка 50 процентов, появилась в версии 3.1."
	runCases(t, []checkCase{
		{"en: a percent sign matches the word percent", "Students get a 50 percent discount on the subscription.", priceEN, false, nil},
		{"en: a percentage changed fails", "Students get a 60% discount on the subscription.", priceEN, false, []string{missing("percent", "60%")}},
		{"en: a dollar sign matches USD", "The annual subscription costs 64 USD.", priceEN, false, nil},
		{"en: dollars match the sign", "The annual subscription costs 64 dollars.", priceEN, false, nil},
		{"en: an amount changed fails", "The annual subscription costs $84.", priceEN, false, []string{missing("money", "$84")}},
		{"en: a currency changed fails", "The annual subscription costs 64 euros.", priceEN, false, []string{missing("money", "64 euros")}},
		{"en: a version without its v matches", "SiYuan 3.1 added the subscription.", priceEN, false, nil},
		{"en: a version written with the word matches v", "The subscription was added in version 3.1.", priceEN, false, nil},
		{"en: a version changed fails", "SiYuan v3.2 added the subscription.", priceEN, false, []string{missing("version", "v3.2")}},
		{"en: a three-part version must match", "SiYuan v3.1.2 added the subscription.", priceEN, false, []string{missing("version", "v3.1.2")}},
		{"ru: percent in Russian matches the sign", "Студентам дают скидку 50%.", priceEN, true, nil},
		{"ru: a percentage changed fails", "Студентам положена скидка 40 процентов.", priceRU, false, []string{missing("percent", "40 процентов")}},
		{"ru: roubles are not dollars", "Годовая подписка стоит 64 рубля.", priceRU, false, []string{missing("money", "64 рубля")}},
		{"ru: dollars in Russian match the sign", "Годовая подписка стоит 64 доллара.", priceEN, true, nil},
		{"ru: a version matches v", "Подписка появилась в версии 3.1.", priceEN, true, nil},
		{"ru: a version changed fails", "Подписка появилась в версии 3.2.", priceRU, false, []string{missing("version", "3.2")}},
	})
}

func TestAnIdentifierTheClaimWritesMustBeTheBlocksOwn(t *testing.T) {
	block := "Asset cleanup keeps `2022-05-01-095621-clean/assets/image-20210808180117-qccp87e.png` in history; see https://b3log.org/siyuan/en/download.html."
	for _, tc := range []struct {
		name, claim string
		bad         bool
	}{
		{"the same block id and link pass", "It keeps image-20210808180117-qccp87e.png, see https://b3log.org/siyuan/en/download.html [1].", false},
		{"a block id with a digit changed fails", "It keeps image-60661503273478-qccp87e.png [1].", true},

		{"a citation marker naming a block id is no claim", "Cleanup keeps assets in history [20210808180117-qccp87e].", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := claimcheck.Check(nil, tc.claim, block, claimcheck.Options{})
			if (len(got) > 0) != tc.bad {
				t.Errorf("problems %v, want bad %v", got, tc.bad)
			}
		})
	}
}
