//! What an entity is created with: its name and QoS.

use super::QoSProfile;

/// Options for a publisher, subscription, service or client: the name plus QoS.
///
/// A plain `&str` converts into options with the default QoS; chain [`IntoPrimitiveOptions::qos`]
/// to choose another: `node.create_publisher::<Int64>("count".qos(QoSProfile::sensor_data()))`.
#[derive(Debug, Clone)]
pub struct PrimitiveOptions {
    /// Topic or service name, relative, private (`~/…`) or absolute.
    pub name: String,
    /// QoS profile.
    pub qos: QoSProfile,
}

/// Conversion into [`PrimitiveOptions`], implemented for names and options.
pub trait IntoPrimitiveOptions: Sized {
    /// Converts.
    fn into_primitive_options(self) -> PrimitiveOptions;
    /// Replaces the QoS profile.
    fn qos(self, qos: QoSProfile) -> PrimitiveOptions {
        let mut o = self.into_primitive_options();
        o.qos = qos;
        o
    }
}

impl IntoPrimitiveOptions for PrimitiveOptions {
    fn into_primitive_options(self) -> PrimitiveOptions {
        self
    }
}

impl IntoPrimitiveOptions for &str {
    fn into_primitive_options(self) -> PrimitiveOptions {
        PrimitiveOptions {
            name: self.to_string(),
            qos: QoSProfile::default(),
        }
    }
}

impl IntoPrimitiveOptions for String {
    fn into_primitive_options(self) -> PrimitiveOptions {
        PrimitiveOptions {
            name: self,
            qos: QoSProfile::default(),
        }
    }
}
