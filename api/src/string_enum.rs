//! A macro for the fieldless enums of the API, which all travel as fixed strings.

/// A string that is not one of an enum's JSON spellings.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {type_name} value {value:?}")]
pub struct UnknownEnumValue {
    /// Rust name of the enum.
    pub type_name: &'static str,
    /// The rejected text.
    pub value: String,
}

/// Declares a fieldless enum whose JSON form is the given string per variant, plus
/// `as_str()`, `ALL` and `Display`. The serde renames and `as_str` are generated from the same
/// literal so the wire spelling and the string used in Flink configuration cannot drift.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident => $text:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize, schemars::JsonSchema,
        )]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $text)]
                $variant,
            )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The exact JSON spelling of this value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::string_enum::UnknownEnumValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::string_enum::UnknownEnumValue {
                        type_name: stringify!($name),
                        value: s.to_owned(),
                    }),
                }
            }
        }
    };
}

pub(crate) use string_enum;
