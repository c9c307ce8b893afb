/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Country codes of country sets ({ country: [CC, ...], database: PATH }):
 * ISO 3166-1 alpha-2, and the two the databases the policy reference names
 * use beside it (XK, Kosovo: MaxMind and DB-IP; ZZ, no location: DB-IP).
 * A code that is none of them would match nothing, and a block by country
 * would let everything through: the loader refuses it and names the code
 * meant (UK: GB; DEU: DE; Germany: DE).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/sort.h"
#include "policy/policy.h"

/* ISO 3166-1 (alpha-2, alpha-3, short English name), by alpha-2. */
static const struct country {
	char a2[3], a3[4];
	const char *name;
} iso3166[] = {
	{ "AD", "AND", "Andorra" },
	{ "AE", "ARE", "United Arab Emirates" },
	{ "AF", "AFG", "Afghanistan" },
	{ "AG", "ATG", "Antigua and Barbuda" },
	{ "AI", "AIA", "Anguilla" },
	{ "AL", "ALB", "Albania" },
	{ "AM", "ARM", "Armenia" },
	{ "AO", "AGO", "Angola" },
	{ "AQ", "ATA", "Antarctica" },
	{ "AR", "ARG", "Argentina" },
	{ "AS", "ASM", "American Samoa" },
	{ "AT", "AUT", "Austria" },
	{ "AU", "AUS", "Australia" },
	{ "AW", "ABW", "Aruba" },
	{ "AX", "ALA", "Aland Islands" },
	{ "AZ", "AZE", "Azerbaijan" },
	{ "BA", "BIH", "Bosnia and Herzegovina" },
	{ "BB", "BRB", "Barbados" },
	{ "BD", "BGD", "Bangladesh" },
	{ "BE", "BEL", "Belgium" },
	{ "BF", "BFA", "Burkina Faso" },
	{ "BG", "BGR", "Bulgaria" },
	{ "BH", "BHR", "Bahrain" },
	{ "BI", "BDI", "Burundi" },
	{ "BJ", "BEN", "Benin" },
	{ "BL", "BLM", "Saint Barthelemy" },
	{ "BM", "BMU", "Bermuda" },
	{ "BN", "BRN", "Brunei Darussalam" },
	{ "BO", "BOL", "Bolivia" },
	{ "BQ", "BES", "Bonaire, Sint Eustatius and Saba" },
	{ "BR", "BRA", "Brazil" },
	{ "BS", "BHS", "Bahamas" },
	{ "BT", "BTN", "Bhutan" },
	{ "BV", "BVT", "Bouvet Island" },
	{ "BW", "BWA", "Botswana" },
	{ "BY", "BLR", "Belarus" },
	{ "BZ", "BLZ", "Belize" },
	{ "CA", "CAN", "Canada" },
	{ "CC", "CCK", "Cocos (Keeling) Islands" },
	{ "CD", "COD", "Congo, Democratic Republic of the" },
	{ "CF", "CAF", "Central African Republic" },
	{ "CG", "COG", "Congo" },
	{ "CH", "CHE", "Switzerland" },
	{ "CI", "CIV", "Cote d'Ivoire" },
	{ "CK", "COK", "Cook Islands" },
	{ "CL", "CHL", "Chile" },
	{ "CM", "CMR", "Cameroon" },
	{ "CN", "CHN", "China" },
	{ "CO", "COL", "Colombia" },
	{ "CR", "CRI", "Costa Rica" },
	{ "CU", "CUB", "Cuba" },
	{ "CV", "CPV", "Cabo Verde" },
	{ "CW", "CUW", "Curacao" },
	{ "CX", "CXR", "Christmas Island" },
	{ "CY", "CYP", "Cyprus" },
	{ "CZ", "CZE", "Czechia" },
	{ "DE", "DEU", "Germany" },
	{ "DJ", "DJI", "Djibouti" },
	{ "DK", "DNK", "Denmark" },
	{ "DM", "DMA", "Dominica" },
	{ "DO", "DOM", "Dominican Republic" },
	{ "DZ", "DZA", "Algeria" },
	{ "EC", "ECU", "Ecuador" },
	{ "EE", "EST", "Estonia" },
	{ "EG", "EGY", "Egypt" },
	{ "EH", "ESH", "Western Sahara" },
	{ "ER", "ERI", "Eritrea" },
	{ "ES", "ESP", "Spain" },
	{ "ET", "ETH", "Ethiopia" },
	{ "FI", "FIN", "Finland" },
	{ "FJ", "FJI", "Fiji" },
	{ "FK", "FLK", "Falkland Islands" },
	{ "FM", "FSM", "Micronesia" },
	{ "FO", "FRO", "Faroe Islands" },
	{ "FR", "FRA", "France" },
	{ "GA", "GAB", "Gabon" },
	{ "GB", "GBR", "United Kingdom" },
	{ "GD", "GRD", "Grenada" },
	{ "GE", "GEO", "Georgia" },
	{ "GF", "GUF", "French Guiana" },
	{ "GG", "GGY", "Guernsey" },
	{ "GH", "GHA", "Ghana" },
	{ "GI", "GIB", "Gibraltar" },
	{ "GL", "GRL", "Greenland" },
	{ "GM", "GMB", "Gambia" },
	{ "GN", "GIN", "Guinea" },
	{ "GP", "GLP", "Guadeloupe" },
	{ "GQ", "GNQ", "Equatorial Guinea" },
	{ "GR", "GRC", "Greece" },
	{ "GS", "SGS", "South Georgia and the South Sandwich Islands" },
	{ "GT", "GTM", "Guatemala" },
	{ "GU", "GUM", "Guam" },
	{ "GW", "GNB", "Guinea-Bissau" },
	{ "GY", "GUY", "Guyana" },
	{ "HK", "HKG", "Hong Kong" },
	{ "HM", "HMD", "Heard Island and McDonald Islands" },
	{ "HN", "HND", "Honduras" },
	{ "HR", "HRV", "Croatia" },
	{ "HT", "HTI", "Haiti" },
	{ "HU", "HUN", "Hungary" },
	{ "ID", "IDN", "Indonesia" },
	{ "IE", "IRL", "Ireland" },
	{ "IL", "ISR", "Israel" },
	{ "IM", "IMN", "Isle of Man" },
	{ "IN", "IND", "India" },
	{ "IO", "IOT", "British Indian Ocean Territory" },
	{ "IQ", "IRQ", "Iraq" },
	{ "IR", "IRN", "Iran" },
	{ "IS", "ISL", "Iceland" },
	{ "IT", "ITA", "Italy" },
	{ "JE", "JEY", "Jersey" },
	{ "JM", "JAM", "Jamaica" },
	{ "JO", "JOR", "Jordan" },
	{ "JP", "JPN", "Japan" },
	{ "KE", "KEN", "Kenya" },
	{ "KG", "KGZ", "Kyrgyzstan" },
	{ "KH", "KHM", "Cambodia" },
	{ "KI", "KIR", "Kiribati" },
	{ "KM", "COM", "Comoros" },
	{ "KN", "KNA", "Saint Kitts and Nevis" },
	{ "KP", "PRK", "North Korea" },
	{ "KR", "KOR", "South Korea" },
	{ "KW", "KWT", "Kuwait" },
	{ "KY", "CYM", "Cayman Islands" },
	{ "KZ", "KAZ", "Kazakhstan" },
	{ "LA", "LAO", "Laos" },
	{ "LB", "LBN", "Lebanon" },
	{ "LC", "LCA", "Saint Lucia" },
	{ "LI", "LIE", "Liechtenstein" },
	{ "LK", "LKA", "Sri Lanka" },
	{ "LR", "LBR", "Liberia" },
	{ "LS", "LSO", "Lesotho" },
	{ "LT", "LTU", "Lithuania" },
	{ "LU", "LUX", "Luxembourg" },
	{ "LV", "LVA", "Latvia" },
	{ "LY", "LBY", "Libya" },
	{ "MA", "MAR", "Morocco" },
	{ "MC", "MCO", "Monaco" },
	{ "MD", "MDA", "Moldova" },
	{ "ME", "MNE", "Montenegro" },
	{ "MF", "MAF", "Saint Martin (French part)" },
	{ "MG", "MDG", "Madagascar" },
	{ "MH", "MHL", "Marshall Islands" },
	{ "MK", "MKD", "North Macedonia" },
	{ "ML", "MLI", "Mali" },
	{ "MM", "MMR", "Myanmar" },
	{ "MN", "MNG", "Mongolia" },
	{ "MO", "MAC", "Macao" },
	{ "MP", "MNP", "Northern Mariana Islands" },
	{ "MQ", "MTQ", "Martinique" },
	{ "MR", "MRT", "Mauritania" },
	{ "MS", "MSR", "Montserrat" },
	{ "MT", "MLT", "Malta" },
	{ "MU", "MUS", "Mauritius" },
	{ "MV", "MDV", "Maldives" },
	{ "MW", "MWI", "Malawi" },
	{ "MX", "MEX", "Mexico" },
	{ "MY", "MYS", "Malaysia" },
	{ "MZ", "MOZ", "Mozambique" },
	{ "NA", "NAM", "Namibia" },
	{ "NC", "NCL", "New Caledonia" },
	{ "NE", "NER", "Niger" },
	{ "NF", "NFK", "Norfolk Island" },
	{ "NG", "NGA", "Nigeria" },
	{ "NI", "NIC", "Nicaragua" },
	{ "NL", "NLD", "Netherlands" },
	{ "NO", "NOR", "Norway" },
	{ "NP", "NPL", "Nepal" },
	{ "NR", "NRU", "Nauru" },
	{ "NU", "NIU", "Niue" },
	{ "NZ", "NZL", "New Zealand" },
	{ "OM", "OMN", "Oman" },
	{ "PA", "PAN", "Panama" },
	{ "PE", "PER", "Peru" },
	{ "PF", "PYF", "French Polynesia" },
	{ "PG", "PNG", "Papua New Guinea" },
	{ "PH", "PHL", "Philippines" },
	{ "PK", "PAK", "Pakistan" },
	{ "PL", "POL", "Poland" },
	{ "PM", "SPM", "Saint Pierre and Miquelon" },
	{ "PN", "PCN", "Pitcairn" },
	{ "PR", "PRI", "Puerto Rico" },
	{ "PS", "PSE", "Palestine" },
	{ "PT", "PRT", "Portugal" },
	{ "PW", "PLW", "Palau" },
	{ "PY", "PRY", "Paraguay" },
	{ "QA", "QAT", "Qatar" },
	{ "RE", "REU", "Reunion" },
	{ "RO", "ROU", "Romania" },
	{ "RS", "SRB", "Serbia" },
	{ "RU", "RUS", "Russia" },
	{ "RW", "RWA", "Rwanda" },
	{ "SA", "SAU", "Saudi Arabia" },
	{ "SB", "SLB", "Solomon Islands" },
	{ "SC", "SYC", "Seychelles" },
	{ "SD", "SDN", "Sudan" },
	{ "SE", "SWE", "Sweden" },
	{ "SG", "SGP", "Singapore" },
	{ "SH", "SHN", "Saint Helena, Ascension and Tristan da Cunha" },
	{ "SI", "SVN", "Slovenia" },
	{ "SJ", "SJM", "Svalbard and Jan Mayen" },
	{ "SK", "SVK", "Slovakia" },
	{ "SL", "SLE", "Sierra Leone" },
	{ "SM", "SMR", "San Marino" },
	{ "SN", "SEN", "Senegal" },
	{ "SO", "SOM", "Somalia" },
	{ "SR", "SUR", "Suriname" },
	{ "SS", "SSD", "South Sudan" },
	{ "ST", "STP", "Sao Tome and Principe" },
	{ "SV", "SLV", "El Salvador" },
	{ "SX", "SXM", "Sint Maarten (Dutch part)" },
	{ "SY", "SYR", "Syria" },
	{ "SZ", "SWZ", "Eswatini" },
	{ "TC", "TCA", "Turks and Caicos Islands" },
	{ "TD", "TCD", "Chad" },
	{ "TF", "ATF", "French Southern Territories" },
	{ "TG", "TGO", "Togo" },
	{ "TH", "THA", "Thailand" },
	{ "TJ", "TJK", "Tajikistan" },
	{ "TK", "TKL", "Tokelau" },
	{ "TL", "TLS", "Timor-Leste" },
	{ "TM", "TKM", "Turkmenistan" },
	{ "TN", "TUN", "Tunisia" },
	{ "TO", "TON", "Tonga" },
	{ "TR", "TUR", "Turkiye" },
	{ "TT", "TTO", "Trinidad and Tobago" },
	{ "TV", "TUV", "Tuvalu" },
	{ "TW", "TWN", "Taiwan" },
	{ "TZ", "TZA", "Tanzania" },
	{ "UA", "UKR", "Ukraine" },
	{ "UG", "UGA", "Uganda" },
	{ "UM", "UMI", "United States Minor Outlying Islands" },
	{ "US", "USA", "United States" },
	{ "UY", "URY", "Uruguay" },
	{ "UZ", "UZB", "Uzbekistan" },
	{ "VA", "VAT", "Holy See" },
	{ "VC", "VCT", "Saint Vincent and the Grenadines" },
	{ "VE", "VEN", "Venezuela" },
	{ "VG", "VGB", "Virgin Islands (British)" },
	{ "VI", "VIR", "Virgin Islands (U.S.)" },
	{ "VN", "VNM", "Viet Nam" },
	{ "VU", "VUT", "Vanuatu" },
	{ "WF", "WLF", "Wallis and Futuna" },
	{ "WS", "WSM", "Samoa" },
	{ "YE", "YEM", "Yemen" },
	{ "YT", "MYT", "Mayotte" },
	{ "ZA", "ZAF", "South Africa" },
	{ "ZM", "ZMB", "Zambia" },
	{ "ZW", "ZWE", "Zimbabwe" },
};

#define NCOUNTRIES (sizeof(iso3166) / sizeof(iso3166[0]))

/* Codes that are not ISO's, and what a database means by them. */
static const struct country vendor[] = {
	{ "XK", "XKX", "Kosovo (not in ISO 3166-1; MaxMind and DB-IP use XK)" },
	{ "ZZ", "", "no location: private, multicast and unassigned addresses (DB-IP only)" },
};

/* Codes people write that no MMDB database has, and the fix. */
static const struct {
	const char *code, *fix;
} wrong[] = {
	{ "UK", "did you mean GB? (the United Kingdom's ISO code; ISO keeps UK reserved)" },
	{ "EL", "did you mean GR? (Greece's ISO code; EL is the European Union's)" },
	{ "EU", "EU is GeoIP Legacy's code for Europe, which MMDB databases (GeoLite2, DB-IP) do not use: list the "
		"countries" },
	{ "AP", "AP is GeoIP Legacy's code for Asia/Pacific, which MMDB databases (GeoLite2, DB-IP) do not use: list "
		"the countries" },
	{ "A1", "A1 is GeoIP Legacy's code for anonymous proxies: MMDB databases (GeoLite2, DB-IP) give such networks "
		"the country they are in or registered to" },
	{ "A2", "A2 is GeoIP Legacy's code for satellite providers: MMDB databases (GeoLite2, DB-IP) give such "
		"networks the country they are in or registered to" },
	{ "O1", "O1 is GeoIP Legacy's 'other country', which MMDB databases (GeoLite2, DB-IP) do not use" },
};

static int by_a2(const void *key, const void *elem)
{
	return strcmp(key, ((const struct country *)elem)->a2);
}

bool policy_country_known(const char *code)
{
	if (search_n(code, iso3166, NCOUNTRIES, sizeof(iso3166[0]), by_a2))
		return true;
	for (size_t i = 0; i < sizeof(vendor) / sizeof(vendor[0]); i++)
		if (!strcmp(code, vendor[i].a2))
			return true;
	return false;
}

/* The country whose alpha-3 code or name word is (case aside), or whose
 * name is a typo away from it; NULL if none. */
static const struct country *country_named(const char *word)
{
	const char *names[NCOUNTRIES + 1], *near;

	for (size_t i = 0; i < NCOUNTRIES; i++) {
		if (!strcasecmp(word, iso3166[i].a3) || !strcasecmp(word, iso3166[i].name))
			return &iso3166[i];
		names[i] = iso3166[i].name;
	}
	names[NCOUNTRIES] = NULL;
	if (strlen(word) < 4 || !(near = diag_closest(word, names)))
		return NULL;
	for (size_t i = 0; i < NCOUNTRIES; i++)
		if (names[i] == near)
			return &iso3166[i];
	return NULL;
}

int policy_country_fix(const char *word, char *buf, size_t len)
{
	const struct country *c;
	char up[3];

	if (strlen(word) == 2) {
		up[0] = (char)toupper((unsigned char)word[0]);
		up[1] = (char)toupper((unsigned char)word[1]);
		up[2] = '\0';
		for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++)
			if (!strcmp(up, wrong[i].code))
				return snprintf(buf, len, "%s", wrong[i].fix);
		return -1;
	}
	if (!(c = country_named(word)))
		return -1;
	return snprintf(buf, len, "did you mean %s (%s)?", c->a2, c->name);
}
