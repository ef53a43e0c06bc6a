//! The helper macro every test area's macro expands through: one `#[test]`
//! per named test, each in its own runtime under
//! [`TEST_DEADLINE`](crate::TEST_DEADLINE).

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_each {
    ($make:expr; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::__run(stringify!($name), async {
                    let harness = $make;
                    $crate::$module::$name(&harness).await;
                });
            }
        )*
    };
}
