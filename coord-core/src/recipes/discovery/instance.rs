//! [`ServiceInstance`]: one registered instance of a service, and its JSON
//! as Curator x-discovery (5.4, its default `JsonInstanceSerializer`)
//! writes and reads it.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// How an instance is kept on the server (Curator's `ServiceType`).
/// coord registers [`ServiceType::Dynamic`] instances (ephemeral nodes);
/// the others are read as they come from Curator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServiceType {
    /// `"DYNAMIC"`: an ephemeral node, gone with its session.
    Dynamic,
    /// `"STATIC"`: a persistent node (Curator's discovery server purges it).
    Static,
    /// `"PERMANENT"`: a persistent node removed only by hand.
    Permanent,
    /// `"DYNAMIC_SEQUENTIAL"`: an ephemeral sequential node.
    DynamicSequential,
}

impl ServiceType {
    /// The name in the JSON: `"DYNAMIC"`, `"STATIC"`, …
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::Dynamic => "DYNAMIC",
            ServiceType::Static => "STATIC",
            ServiceType::Permanent => "PERMANENT",
            ServiceType::DynamicSequential => "DYNAMIC_SEQUENTIAL",
        }
    }

    fn parse(s: &str) -> Option<ServiceType> {
        Some(match s {
            "DYNAMIC" => ServiceType::Dynamic,
            "STATIC" => ServiceType::Static,
            "PERMANENT" => ServiceType::Permanent,
            "DYNAMIC_SEQUENTIAL" => ServiceType::DynamicSequential,
            _ => return None,
        })
    }
}

/// One instance of a service, as Curator x-discovery's `ServiceInstance`:
/// the node `BASE/NAME/ID` holds it as JSON (see
/// [`ServiceInstance::to_json`] for the exact bytes).
///
/// Made by [`ServiceInstance::new`] (a fresh UUID as its id, the
/// registration time now, [`ServiceType::Dynamic`]); change the public
/// fields before registering it.
///
/// ```
/// use coord_core::recipes::ServiceInstance;
/// let mut me = ServiceInstance::new("api", "10.0.0.7", 8080);
/// me.id = "api-7".into();
/// me.payload = Some(serde_json::json!({"zone": "eu-1"}));
/// let json = String::from_utf8(me.to_json()).unwrap();
/// assert!(json.starts_with(r#"{"name":"api","id":"api-7","address":"10.0.0.7","port":8080,"sslPort":null,"payload":{"zone":"eu-1"},"registrationTimeUTC":"#));
/// assert!(json.ends_with(r#","serviceType":"DYNAMIC","uriSpec":null}"#));
/// assert_eq!(ServiceInstance::from_json(json.as_bytes()).unwrap(), me);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServiceInstance {
    /// The service's name: the node's parent is `BASE/<name>`.
    pub name: String,
    /// The instance's id, unique within the service: the node's name.
    pub id: String,
    /// Host name or IP address (Curator's may be `null`: read as `""`).
    pub address: String,
    /// The plain port, if any.
    pub port: Option<u16>,
    /// The TLS port, if any.
    pub ssl_port: Option<u16>,
    /// Any JSON the service publishes with its instance but an array;
    /// `None` is written `null`. A Curator peer reads a JSON object,
    /// string, number or boolean payload as a `Map`, `String`,
    /// `Integer`/`Double` or `Boolean`; it reads an array as Jackson's
    /// typed value `[class, value]`, and one it cannot fails its whole
    /// `queryForInstances`, so registering an array payload is refused
    /// (wrap it in an object: arrays inside are fine). Curator writes a
    /// typed object payload with its class
    /// (`{"@class":"java.util.LinkedHashMap",…}`), which is kept here as
    /// it is.
    pub payload: Option<Value>,
    /// When the instance was registered, in milliseconds since the Unix
    /// epoch (Curator's `registrationTimeUTC`).
    pub registration_time_utc: i64,
    /// How it is kept; coord registers only [`ServiceType::Dynamic`].
    pub service_type: ServiceType,
    /// Curator's `UriSpec` (`{"parts":[{"value":…,"variable":…},…]}`), kept
    /// as its JSON; `None` is written `null`.
    pub uri_spec: Option<Value>,
    /// Curator's `enabled` (CURATOR-275): a disabled instance is never
    /// picked by a [`ServiceProvider`](super::ServiceProvider). Curator's
    /// default serializer neither writes it nor needs it (`true` when
    /// absent); it is written only when `false`.
    pub enabled: bool,
}

/// Milliseconds since the Unix epoch now.
fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The JSON text of `v` (a string or any value): serde_json's, compact.
fn text(v: &Value) -> String {
    v.to_string()
}

impl ServiceInstance {
    /// An instance of `name` at `address`:`port`, with a fresh UUID as its
    /// id, registered now, [`ServiceType::Dynamic`], no TLS port, payload
    /// or URI spec.
    pub fn new(name: impl Into<String>, address: impl Into<String>, port: u16) -> Self {
        ServiceInstance {
            name: name.into(),
            id: uuid::Uuid::new_v4().to_string(),
            address: address.into(),
            port: Some(port),
            ssl_port: None,
            payload: None,
            registration_time_utc: now_millis(),
            service_type: ServiceType::Dynamic,
            uri_spec: None,
            enabled: true,
        }
    }

    /// The instance as Curator 5.4's default serializer writes it: the
    /// keys in its order, compact, absent values `null`:
    /// `{"name":"svc","id":"j2","address":"127.0.0.1","port":9003,"sslPort":null,"payload":null,"registrationTimeUTC":1795735731954,"serviceType":"DYNAMIC","uriSpec":null}`
    /// (plus `"enabled":false` at the end for a disabled instance).
    pub fn to_json(&self) -> Vec<u8> {
        let opt = |v: &Option<Value>| v.as_ref().map_or_else(|| "null".to_owned(), text);
        let port = |p: Option<u16>| p.map_or_else(|| "null".to_owned(), |p| p.to_string());
        let mut s = format!(
            "{{\"name\":{},\"id\":{},\"address\":{},\"port\":{},\"sslPort\":{},\"payload\":{},\
             \"registrationTimeUTC\":{},\"serviceType\":\"{}\",\"uriSpec\":{}",
            text(&Value::from(self.name.as_str())),
            text(&Value::from(self.id.as_str())),
            text(&Value::from(self.address.as_str())),
            port(self.port),
            port(self.ssl_port),
            opt(&self.payload),
            self.registration_time_utc,
            self.service_type.as_str(),
            opt(&self.uri_spec),
        );
        if !self.enabled {
            s.push_str(",\"enabled\":false");
        }
        s.push('}');
        s.into_bytes()
    }

    /// Read an instance as Curator writes it (any key order, unknown keys
    /// ignored, a missing key as Curator's defaults: `""` for the name and
    /// id, `null`, 0, `DYNAMIC`, enabled).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `data` is not a JSON object, or a
    /// key holds a value of the wrong type (a port that is not a number
    /// from 0 to 65535, an unknown service type).
    pub fn from_json(data: &[u8]) -> Result<ServiceInstance> {
        let v: Value = serde_json::from_slice(data)
            .map_err(|e| Error::InvalidArgument(format!("a service instance is not JSON: {e}")))?;
        let Value::Object(m) = v else {
            return Err(bad("the instance", "an object"));
        };
        let service_type = match m.get("serviceType") {
            None | Some(Value::Null) => ServiceType::Dynamic,
            Some(Value::String(s)) => ServiceType::parse(s).ok_or_else(|| {
                Error::InvalidArgument(format!("unknown service type {s:?} in a service instance"))
            })?,
            Some(_) => return Err(bad("serviceType", "a string")),
        };
        Ok(ServiceInstance {
            name: string(&m, "name")?,
            id: string(&m, "id")?,
            address: string(&m, "address")?,
            port: port(&m, "port")?,
            ssl_port: port(&m, "sslPort")?,
            payload: value(&m, "payload"),
            registration_time_utc: match m.get("registrationTimeUTC") {
                None | Some(Value::Null) => 0,
                Some(v) => v
                    .as_i64()
                    .ok_or_else(|| bad("registrationTimeUTC", "an integer"))?,
            },
            service_type,
            uri_spec: value(&m, "uriSpec"),
            enabled: match m.get("enabled") {
                None | Some(Value::Null) => true,
                Some(v) => v.as_bool().ok_or_else(|| bad("enabled", "a boolean"))?,
            },
        })
    }

    /// Check what coord refuses to register: a payload that is a JSON
    /// array (see [`ServiceInstance::payload`]).
    pub(super) fn check_writable(&self) -> Result<()> {
        if matches!(self.payload, Some(Value::Array(_))) {
            return Err(Error::InvalidArgument(
                "a service instance's payload may not be a JSON array: Curator reads a bare                  array as a typed value and fails on it; wrap it in an object"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// `address:port` (the TLS port when there is no plain one; the
    /// address alone with neither).
    pub fn endpoint(&self) -> String {
        match self.port.or(self.ssl_port) {
            Some(p) if self.address.contains(':') => format!("[{}]:{p}", self.address),
            Some(p) => format!("{}:{p}", self.address),
            None => self.address.clone(),
        }
    }
}

fn bad(key: &str, want: &str) -> Error {
    Error::InvalidArgument(format!(
        "a service instance's {key} is not {want}, as Curator writes it"
    ))
}

fn string(m: &Map<String, Value>, key: &str) -> Result<String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(key, "a string")),
    }
}

fn port(m: &Map<String, Value>, key: &str) -> Result<Option<u16>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .map(Some)
            .ok_or_else(|| bad(key, "a port number")),
    }
}

fn value(m: &Map<String, Value>, key: &str) -> Option<Value> {
    m.get(key).filter(|v| !v.is_null()).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curator_bytes_exactly() {
        let i = ServiceInstance {
            name: "svc".into(),
            id: "j2".into(),
            address: "127.0.0.1".into(),
            port: Some(9003),
            ssl_port: None,
            payload: None,
            registration_time_utc: 1_795_735_731_954,
            service_type: ServiceType::Dynamic,
            uri_spec: None,
            enabled: true,
        };
        let want = r#"{"name":"svc","id":"j2","address":"127.0.0.1","port":9003,"sslPort":null,"payload":null,"registrationTimeUTC":1795735731954,"serviceType":"DYNAMIC","uriSpec":null}"#;
        assert_eq!(String::from_utf8(i.to_json()).expect("utf-8"), want);
        assert_eq!(
            ServiceInstance::from_json(want.as_bytes()).expect("read back"),
            i
        );
    }

    #[test]
    fn reads_curator_typed_payloads_and_extra_keys() {
        let json = r#"{"name":"svc","id":"x","address":null,"port":null,"sslPort":8443,
            "payload":{"@class":"java.util.LinkedHashMap","zone":"a"},"registrationTimeUTC":5,
            "serviceType":"STATIC","uriSpec":{"parts":[{"value":"scheme","variable":true}]},
            "enabled":false,"other":1}"#;
        let i = ServiceInstance::from_json(json.as_bytes()).expect("Curator's");
        assert_eq!(i.address, "");
        assert_eq!(i.ssl_port, Some(8443));
        assert_eq!(i.payload.as_ref().expect("a payload")["zone"], "a");
        assert_eq!(i.service_type, ServiceType::Static);
        assert!(!i.enabled);
        assert!(i.uri_spec.is_some());
        let again = ServiceInstance::from_json(&i.to_json()).expect("read back");
        assert_eq!(again, i);
    }

    #[test]
    fn refuses_what_is_not_an_instance() {
        for bad in [
            &b"[1]"[..],
            b"not json",
            br#"{"port":"80"}"#,
            br#"{"port":70000}"#,
        ] {
            assert!(matches!(
                ServiceInstance::from_json(bad),
                Err(Error::InvalidArgument(_))
            ));
        }
    }
}
